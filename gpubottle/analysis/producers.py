"""A loop with no DataLoader that receives its batches from a producer: another process or thread
puts them on a queue (multiprocessing.Queue, queue.Queue, a Pipe) and the loop's `q.get()` waits.
py-spy's samples tell both sides: the main thread blocked in a receive under the loop's own line,
and the producing process busy in its own function."""

from __future__ import annotations

import linecache
from collections import Counter

from gpubottle.analysis.stack_shares import busiest_function
from gpubottle.analysis.stacks import Frame, ThreadSamples, is_blocking, phase_of, receives
from gpubottle.evidence import StackEvidence
from gpubottle.probes.sites import is_user_file, place


def waiting_for_input(stacks: list[list[Frame]]) -> list[tuple[list[Frame], Frame]]:
    """The main thread's samples blocked receiving from a queue or a pipe under a line of the
    user's, outside the model's phases and the DataLoader, each with that line's frame."""
    out = []
    for st in stacks:
        if not st or not is_blocking(st[-1]) or phase_of(st) != "other" or not receives(st):
            continue
        user = next((f for f in reversed(st) if is_user_file(f.file)), None)
        if user is not None:
            out.append((st, user))
    return out


def producer_evidence(ev: StackEvidence, main: list[list[Frame]],
                      producers: dict[int, ThreadSamples]) -> None:
    """The share of the main thread's samples (`main`) waiting on its input, the line it waits at,
    and the run's other processes (not DataLoader workers: producers, or a logger's uploader the
    script started): how busy, and where, whether or not the loop waits for them."""
    _others(ev, producers)
    waits = waiting_for_input(main)
    if not waits:
        return
    ev.main_wait_share = round(len(waits) / len(main), 4)
    # Through multiprocessing (a Queue or a Pipe between processes), or a queue.Queue a thread of
    # the loop's own process fills (which shares the loop's GIL).
    ev.main_wait_from_process = any("multiprocessing" in f.file for st, _ in waits for f in st)
    (file, line), _ = Counter((f.file, f.line) for _, f in waits).most_common(1)[0]
    ev.main_wait_site = place(file, line)
    ev.main_wait_statement = linecache.getline(file, line).strip()[:120] or None


def producer_threads(ev: StackEvidence, threads: ThreadSamples | None) -> None:
    """The loop waits on a queue or a pool its own process's threads fill (`threads`: their samples
    in the measured steps): how busy they are, and where, as another process's would be."""
    if threads is not None and ev.main_wait_from_process is False and not ev.producer_samples:
        _others(ev, {threads.pid: threads})


_STARTS = ("multiprocessing/process.py",)


def _others(ev: StackEvidence, producers: dict[int, ThreadSamples]) -> None:
    others = [st for ts in producers.values() for st in ts.stacks if st]
    if not others:
        return
    busy = [st for st in others if not is_blocking(st[-1])]
    ev.producer_samples = len(others)
    ev.producer_busy = round(len(busy) / len(others), 4)
    # By function (a comprehension is its function's), at the line most of them are on. A forked
    # process's stack holds its parent's frames beneath its start (the script's main at its
    # `Pool(2)` line): its own work is above it.
    own = [st[max((i for i, f in enumerate(st) if f.file.endswith(_STARTS)), default=-1) + 1:] for st in busy]
    hot = busiest_function(own)
    if hot is not None:
        name, file, line, n = hot
        ev.producer_hot = name
        ev.producer_hot_site = place(file, line)
        ev.producer_hot_share = round(n / len(busy), 4)
