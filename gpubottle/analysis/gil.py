"""Python threads of the script's own process that run Python without pause: they hold the
interpreter lock (the GIL) the training loop needs.

Every torch op releases the lock while it computes and takes it back after; where another thread
runs Python meanwhile, the loop waits for it to give the lock up, up to the switch interval (5 ms,
sys.getswitchinterval()) at every op. Measured: a thread checking a deque of losses in a loop with
no sleep made 782 steps of 2.3 ms take 23 s an epoch instead of 0.8 s, and `import torch._dynamo`
(the first optimizer) 18 s. The loop's own thread is then neither on a CPU nor waiting for one,
and its samples sit at ordinary lines (not in a wait): the CPU goes to the other thread.

Each thread's CPU comes from the supervisor's reads of /proc/PID/task (ThreadsCpu, every 2 s), its
name and where it runs from py-spy's samples, which name threads by the same native id. Threads
with no Python frames (torch's and BLAS's pools) never appear in py-spy's samples: they compute
without the lock and are left out.
"""

from __future__ import annotations

import os
from collections import Counter

from gpubottle.analysis.stack_shares import busiest_function
from gpubottle.analysis.stacks import Frame, is_blocking, thread_timelines
from gpubottle.evidence import BusyThread
from gpubottle.probes.sites import place
from gpubottle.wire import CpuSample, ThreadsCpu

Span = tuple[float, float]
MIN_SPAN_S = 1.5  # thread CPU read over less than this is not a rate (10-ms ticks, 2-s reads)
MIN_CORES = 0.05  # a thread below this is no one's concern: not kept


def thread_cores(records: list[ThreadsCpu], pid: int, span: Span) -> dict[int, float]:
    """Each thread's cores (CPU seconds a second) over `span`, from the readings inside it (a thread
    a reading leaves out had not run since the one before)."""
    rows = sorted((r for r in records if int(r.pid) == pid), key=lambda r: float(r.t))
    seen: dict[int, float] = {}
    first: dict[int, float] | None = None
    t_first = t_last = 0.0
    for r in rows:
        for tid, cpu in r.cpu.items():
            seen[int(tid)] = float(cpu)
        t = float(r.t)
        if t < span[0]:
            continue
        if t > span[1]:
            break
        if first is None:
            first, t_first = dict(seen), t
        last, t_last = dict(seen), t
    if first is None or t_last - t_first < MIN_SPAN_S:
        return {}
    dt = t_last - t_first
    return {tid: (cpu - first.get(tid, 0.0)) / dt for tid, cpu in last.items()}


def _python_threads(stack_dir: str, pid: int, spans: list[Span]) -> dict[int, tuple[str, list[list[Frame]]]]:
    """The process's Python threads other than its main one and gpubottle's: native id -> (name,
    the stacks py-spy sampled inside `spans`)."""
    out: dict[int, tuple[str, list[list[Frame]]]] = {}
    for tl, samples in thread_timelines(stack_dir, {pid}):
        if tl.pid != pid or tl.os_tid is None or tl.is_main:
            continue
        name, stacks = out.setdefault(tl.os_tid, (tl.thread, []))
        stacks.extend(st for t, st in samples if any(a <= t <= b for a, b in spans))
    return out


def _target(st: list[Frame]) -> Frame | None:
    """The function the thread was started with: the frame above threading's Thread.run."""
    for i, f in enumerate(st):
        if f.name.endswith("run") and os.path.basename(f.file) == "threading.py" and i + 1 < len(st):
            return st[i + 1]
    return None


def _where(busy: list[list[Frame]]) -> tuple[str | None, str | None]:
    """The function most busy samples are in (else their innermost frame) and the line most of them
    are at (stack_shares.busiest_function)."""
    hot = busiest_function(busy, innermost=True)
    return (hot[0], place(hot[1], hot[2])) if hot is not None else (None, None)


def busy_threads(records: list[ThreadsCpu], stack_dir: str | None, pid: int, measured: Span,
                 start_up: Span | None) -> list[BusyThread]:
    """The script's Python threads (not its main one, not gpubottle's) that used CPU over the
    measured steps or in start-up, busiest first, with where their samples are when not waiting.
    Threads started with the same function are one entry (a pool): sixteen batch-making threads
    of 0.03 of a core each hold the lock as one of 0.5 would."""
    cores = thread_cores(records, pid, measured)
    early = thread_cores(records, pid, start_up) if start_up is not None else {}
    listed = stack_dir is not None and os.path.isfile(os.path.join(stack_dir, "chunks.jsonl"))
    if not (cores or early) or stack_dir is None or not listed:
        return []
    spans = [measured] + ([start_up] if start_up is not None else [])
    return pooled(_python_threads(stack_dir, pid, spans), cores, early)


def pooled(threads: dict[int, tuple[str, list[list[Frame]]]], cores: dict[int, float],
           early: dict[int, float]) -> list[BusyThread]:
    """One entry a thread, or a pool's (threads started with the same function, from the same
    file); those under MIN_CORES left out; busiest first."""
    groups: dict[tuple[str, str] | int, list[tuple[int, str, list[list[Frame]]]]] = {}
    for tid, (name, stacks) in threads.items():
        if stacks:
            started = _started(stacks)
            groups.setdefault(started if started is not None else tid, []).append((tid, name, stacks))
    out = []
    for key, members in groups.items():
        used = sum(cores.get(tid, 0.0) for tid, _, _ in members)
        befores = [early[tid] for tid, _, _ in members if tid in early]
        before = sum(befores) if befores else None
        if max(used, before or 0.0) < MIN_CORES:
            continue
        stacks = [st for _, _, sts in members for st in sts]
        busy = [st for st in stacks if st and not is_blocking(st[-1])]
        function, site = _where(busy)
        out.append(BusyThread(members[0][1], round(used, 4), round(len(busy) / len(stacks), 4), len(stacks),
                              function, site, key[1] if isinstance(key, tuple) else None,
                              round(before, 4) if before is not None else None, len(members)))
    return sorted(out, key=lambda b: -max(b.cores, b.startup_cores or 0.0))


def _started(stacks: list[list[Frame]]) -> tuple[str, str] | None:
    """The function a thread was started with, as most of its samples show it: (file, name), the
    file too (two modules' `run` are two pools)."""
    seen = Counter((top.file, top.name) for st in stacks if (top := _target(st)) is not None)
    return seen.most_common(1)[0][0] if seen else None


def main_thread_shares(rows: list[CpuSample], pid: int, span: Span) -> tuple[float, float] | None:
    """The main thread's share of `span` on a CPU and waiting for one (the tree sampler's reads)."""
    ran = [float((r.main_thread or {}).get(str(pid), -1.0)) for r in rows if span[0] <= float(r.t) <= span[1]]
    queued = [float((r.run_queue or {}).get(str(pid), 0.0)) for r in rows if span[0] <= float(r.t) <= span[1]]
    seen = [x for x in ran if x >= 0.0]
    if len(seen) < 3:
        return None
    return sum(seen) / len(seen), sum(queued) / len(queued)
