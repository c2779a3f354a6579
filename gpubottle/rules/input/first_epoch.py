"""Waits that are the first epoch's: the dataset reads each sample once and serves it from memory
after (a cache it fills in __getitem__, or the OS's page cache). More workers overlap the first
epoch's reads, but a cache the dataset object fills lives in each worker, and without
persistent_workers=True the workers, and their caches, end with each epoch: every epoch reads again.
Measured (a dataset caching 1,600 samples read at 2 ms each, 6 epochs, batch 32): no workers 3.8 s;
2 workers 10.9-11.0 s (2.9x slower); 10 workers 3.4 s, where the report had promised 8.2 -> 5.6 s;
10 persistent workers 2.0 s. So the worker fix loses its number and says why, as a try."""

from __future__ import annotations

import dataclasses
import statistics

from gpubottle.evidence import LoaderInfo
from gpubottle.report import Fact, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import ms


def first_epoch_reads(lo: LoaderInfo) -> tuple[float, float] | None:
    """(the first epoch's wait per batch, the later epochs' median) where the first is
    FIRST_EPOCH_WAIT_RATIO times the rest or more, over two complete epochs or more."""
    w = lo.epoch_wait_s
    if len(w) < 2:
        return None
    later = statistics.median(w[1:])
    if w[0] < th.INPUT_WAIT_FLOOR_S or w[0] < th.FIRST_EPOCH_WAIT_RATIO * later:
        return None
    return w[0], later


def first_epoch_fact(first: float, later: float, epochs: int) -> Fact:
    return Fact(f"the wait is the first epoch's: {ms(first)} a batch there, {ms(later)} in the "
                f"{epochs - 1} epochs after it (each sample read once, then served from memory)",
                "first_epoch_wait_s", round(first, 6))


def cached_worker_fixes(fixes: list[Fix], lo: LoaderInfo) -> list[Fix]:
    """The worker fixes for waits that are the first epoch's: no promised number (a mean over the
    epochs is not what workers change), persistent workers, and why."""
    out = []
    for f in fixes:
        if "num_workers" not in f.change:
            out.append(f)
            continue
        change = dict(f.change)
        if lo.persistent_workers is not True and "persistent_workers" not in change:
            change["persistent_workers"] = [bool(lo.persistent_workers), True]
        text = f.text if f.text.startswith("try") else "try: " + f.text
        out.append(dataclasses.replace(
            f, text=text + ", with persistent_workers=True: a cache the dataset fills is each "
            "worker's own, and without it the workers (and their caches) end with every epoch, "
            "which then reads everything again (measured: 2 workers without it 2.9x slower than "
            "none); time it",
            change=change, expected=None, expected_step_s=None, expected_run_s=None))
    return out
