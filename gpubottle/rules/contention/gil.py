"""gil-contention: a Python thread of the script's own process runs Python beside the training
loop, and the loop waits for the interpreter lock (the GIL) it holds.

The loop's thread is then neither on a CPU nor waiting for one, nor in a wait for data or a queue
(its samples sit at ordinary lines: each torch op gives the lock up while it computes and waits
for it back), while the other thread burns a core (analysis/gil.py). Said with the thread's name,
the line it spins at, and what it cost the steps; the fix makes a thread that never waits wait
between its checks, and moves the work of one that waits part of the time. No number is
promised: how much the lock costs depends on how often the loop releases it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import BusyThread, Evidence
from gpubottle.evidence.account import STARTUP
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import enough_steps, entry, gpu_sets_pace
from gpubottle.units import cores, pct

# Threads torch's DataLoader runs in the loop's process: its own, doing its part of loading.
_LOADER_THREADS = ("_pin_memory_loop",)


@dataclass
class GilContention:
    thread: BusyThread
    ran: float  # the loop's thread: share of the steps (or of start-up) on a CPU...
    queued: float  # ...waiting for one...
    waiting: float  # ...in a wait (data, a queue, a lock) by its samples
    held: float  # ...and none of these: kept from the lock (the finding's share)
    startup_s: float | None = None  # start-up only: its seconds (the steps ran free of it)


def _busy(b: BusyThread, cores: float | None) -> bool:
    return (cores or 0.0) >= th.GIL_THREAD_CORES and b.busy_share >= th.GIL_THREAD_BUSY \
        and b.started not in _LOADER_THREADS


def decide_gil(ev: Evidence) -> GilContention | None:
    """Over the measured steps; else over start-up alone (a thread that spins until the first
    step's data exists: the imports and the model's set-up wait, 15 s of `import torch._dynamo`)."""
    c, w = ev.cpu, ev.measured()
    if c is None or w is None or not enough_steps(ev, w):
        return None
    busy = [b for b in c.busy_threads if _busy(b, b.cores)]
    # (where the GPU sets the pace, the loop's thread off its CPU waits for the device)
    if busy and c.main_thread_cores is not None and gpu_sets_pace(ev) is None:
        ran, queued = float(c.main_thread_cores), float(c.main_run_queue or 0.0)
        waiting = float(c.main_waiting_samples or 0.0)
        held = max(0.0, 1.0 - ran - queued - waiting)
        if held >= th.GIL_LOOP_HELD:
            return GilContention(busy[0], ran, queued, waiting, held)
    early = [b for b in c.busy_threads if _busy(b, b.startup_cores)]
    start = entry(ev, STARTUP)
    if not early or c.startup_main_ran is None or start is None:
        return None
    ran, queued = float(c.startup_main_ran), float(c.startup_main_queued or 0.0)
    held = max(0.0, 1.0 - ran - queued)
    if held < th.GIL_LOOP_HELD:
        return None
    return GilContention(early[0], ran, queued, 0.0, held, start.seconds)


def _who(b: BusyThread) -> str:
    if b.count > 1:  # a pool: the threads started with the same function
        return f"{b.count} threads started with {b.started}" if b.started else f"{b.count} threads"
    return f"thread '{b.name}'"


def _runs(b: BusyThread) -> str:
    return "run" if b.count > 1 else "runs"


def _fixes(b: BusyThread) -> list[Fix]:
    """A thread that never waits polls (a monitor's `while not stop:`): it should wait between its
    checks. One that waits for its work part of the time (a queue's consumer computing metrics)
    has work to do: that work belongs in a process, first."""
    what = b.function or "its function"
    poll = Fix(text=f"make {what} wait between its checks instead of running without pause: a time.sleep() "
               "in its loop (0.1 s is quick for a monitor), or block on a queue.Queue or threading.Event "
               "the training loop feeds (q.get() instead of polling), so that it holds the lock only when "
               "it has work; try it and time it", where=b.site)
    work = Fix(text=f"{what}'s work (making batches, say) belongs in a process, which has its own "
               "interpreter lock: DataLoader workers (num_workers) for batches, multiprocessing for the "
               "rest, or less of it (every few steps); or, to shorten each wait, sys.setswitchinterval("
               "0.0005) at the start (the loop then waits at most 0.5 ms per op, the thread still takes "
               "its share of the lock): try it and time it")
    if b.busy_share >= th.GIL_POLLING:
        return [poll, work]
    work.where = b.site
    return [work, poll]


_LOCK = ("kept from the interpreter lock, which every torch op gives up while it computes and takes "
         "back after, waiting up to the switch interval (5 ms by default, sys.getswitchinterval()) "
         "while another thread runs")
_LOCK_START = ("kept from the interpreter lock, which the imports and the set-up's ops take back again "
               "and again, waiting up to the switch interval (5 ms by default) each time")


def gil_contention(ev: Evidence) -> list[Finding]:
    d = decide_gil(ev)
    if d is None:
        return []
    b = d.thread
    at = f" in {b.function} ({b.site})" if b.function and b.site else ""
    named = f" ({b.function}, {b.site})" if b.function and b.site else ""
    they, their, together = ("they", "their", " together") if b.count > 1 else ("it", "its", "")
    samples = f"in {pct(b.busy_share)} of {their} {b.samples} stack samples" + (
        " (the rest in a wait)" if b.busy_share < 0.995 else "")
    how = "without pause" if b.busy_share >= th.GIL_POLLING else f"{pct(b.busy_share)} of the time"
    if d.startup_s is not None:  # start-up only
        total = sum(a.seconds for a in ev.account) or d.startup_s
        share = d.held * d.startup_s / total
        facts = [
            Fact(f"{_who(b)} of the script's process used {cores(b.startup_cores or 0.0)} of a core"
                 f"{together} in start-up, running Python{at} {samples}", "gil_startup_cores",
                 round(b.startup_cores or 0.0, 3)),
            Fact(f"the main thread ran {pct(d.ran)} of the {d.startup_s:.1f}-s start-up and waited for a "
                 f"core {pct(d.queued)}; {pct(d.held)} it was neither: {_LOCK_START}", "gil_held_share",
                 round(d.held, 4)),
        ]
        summary = (f"start-up waits for Python's interpreter lock (the GIL) {pct(d.held)} of its "
                   f"{d.startup_s:.1f} s: {_who(b)} {_runs(b)} Python beside it {how}{named}")
        return [Finding(v.GIL_CONTENTION, th.severity_for_run_share(share), None, summary, facts, _fixes(b),
                        phase=STARTUP, run_share=round(share, 4))]
    facts = [
        Fact(f"{_who(b)} of the script's process used {cores(b.cores)} of a core{together} over the "
             f"measured steps, running Python{at} {samples}", "gil_thread_cores", round(b.cores, 3)),
        Fact(f"the loop's own thread ran {pct(d.ran)} of the time and waited for a core {pct(d.queued)}; "
             f"{pct(d.held)} it was neither, nor waiting for data or a queue: {_LOCK}",
             "gil_held_share", round(d.held, 4)),
    ]
    if b.startup_cores is not None and b.startup_cores >= th.GIL_THREAD_CORES:
        facts.append(Fact(f"{they} ran during start-up too ({cores(b.startup_cores)} of a core): the "
                          "imports and set-up before the first step waited for the lock as well",
                          "gil_startup_cores", round(b.startup_cores, 3)))
    severity = "critical" if d.held >= th.GIL_LOOP_HELD_CRITICAL else "warning"
    summary = (f"the training loop waits for Python's interpreter lock (the GIL) {pct(d.held)} of the "
               f"time: {_who(b)} {_runs(b)} Python beside it {how}{named}")
    return [Finding(v.GIL_CONTENTION, severity, round(d.held, 4), summary, facts, _fixes(b))]
