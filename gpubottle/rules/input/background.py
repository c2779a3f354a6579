"""Batches a background thread fetches from the DataLoader and hands the loop through a queue
(prefetch_generator's BackgroundGenerator, hand-written prefetchers). The loader's fetches are not
the loop's waits (read as such, such a loop read "waits for data 99% of the time"); the loop waits
when its own thread is off the CPU, for the producer. With num_workers=0 the producer loads in the
training's own process, beside the loop, under one GIL: on a 2-core VM the loop's 128 steps took
1.16-1.18 s with a 6 ms-a-batch loader behind such a thread, 0.50 s without the loading, and
0.78-0.98 s with num_workers=2 behind the same thread. How much workers win is not predicted here:
the fix is a try."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import background_wait
from gpubottle.units import ms, pct


@dataclass
class Background:
    loader: LoaderInfo
    fetch_s: float  # the producer's median fetch, a batch
    step_s: float
    wait: float  # the loop's share of its steps off the CPU: its wait for the producer


def decide_background(ev: Evidence, w: Measured, lo: LoaderInfo) -> Background | None:
    wait = background_wait(ev, w)
    if wait is None or lo.off_loop_fetch_s is None or wait < th.INPUT_WAIT_WARNING:
        return None
    return Background(lo, lo.off_loop_fetch_s, w.mean_step_s, wait)


def background_finding(d: Background) -> Finding:
    lo = d.loader
    site = f" at {lo.site}" if lo.site else ""
    facts = [
        Fact(f"the DataLoader{site} is fetched on another thread than the loop's: "
             f"{ms(d.fetch_s)} a batch against a {ms(d.step_s)} step", "background_fetch_s", d.fetch_s),
        Fact(f"the loop's own thread is off the CPU {pct(d.wait)} of each step, waiting for it",
             "background_wait_share", round(d.wait, 4)),
    ]
    if lo.num_workers:
        fix = Fix(text=f"the thread only takes batches from {lo.num_workers} worker(s): more of them, "
                       "or cheaper per-sample work, makes batches faster; try it and time it",
                  where=lo.site)
    else:
        want = 2
        fix = Fix(text=f"give the DataLoader workers, num_workers={want}: the thread then takes batches "
                       "that worker processes loaded, instead of loading them itself inside the "
                       "training's process (one GIL with the loop); try it and time it",
                  where=lo.site, change={"num_workers": [0, want]})
    return Finding(
        v.DATA_STARVED, th.severity_for_share(d.wait), round(d.wait, 4),
        f"the loop waits about {pct(d.wait)} of each step for batches a background thread fetches "
        f"from the DataLoader{site} ({ms(d.fetch_s)} a batch)", facts, [fix])
