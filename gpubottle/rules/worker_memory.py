"""Forked DataLoader workers that copy the dataset they read (copy-on-read): the run's memory grows
while the script keeps nothing, and stops only when every worker holds its own copy.

A forked worker shares its parent's pages until it writes to one. Reading a Python object writes
its reference count, so a dataset kept as Python objects (lists, dicts, strings) is copied into
each worker page by page as it is read; one numpy array or tensor is read without writes and stays
shared. The growth is bounded (workers x the dataset), which a straight-line projection misses.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.units import duration, gib


@dataclass
class CopyOnRead:
    facts: list[Fact]
    fix: Fix
    severity: str
    reason: str


def copy_on_read(ev: Evidence) -> CopyOnRead | None:
    m = ev.memory
    lo = main_loader(ev)
    if m is None or lo is None or not lo.num_workers or m.workers_growth_bytes_per_s is None:
        return None
    if lo.start_method not in (None, "fork"):
        return None  # spawned workers load their own dataset: nothing is shared to copy
    wg = m.workers_growth_bytes_per_s
    if wg < th.GROWTH_MIN_BYTES_PER_S or (m.workers_growth_r2 or 0.0) < th.COPY_ON_READ_R2:
        return None
    if m.growth_bytes_per_s is not None and wg < th.COPY_ON_READ_SHARE * m.growth_bytes_per_s:
        return None  # the workers are not what grows
    nw = lo.num_workers
    facts = [Fact(
        f"the {nw} DataLoader workers' own memory grows by {gib(wg * 60)}/min (R^2 "
        f"{m.workers_growth_r2 or 0:.2f}) while the script keeps nothing: forked workers copy the "
        "pages of the dataset they read (reading a Python object writes its reference count)",
        "workers_growth_bytes_per_s", round(wg, 1))]
    available = m.min_available_bytes or 0
    severity, reason = "warning", (f"the DataLoader workers copy the dataset as they read it "
                                   f"(+{gib(wg * 60)}/min)")
    dataset = m.main_before_workers_bytes
    if dataset:
        bound = nw * dataset
        left = max(0, bound - (m.workers_private_bytes or 0))
        eta = left / wg
        if left > 0.9 * available and available > 0:
            exhaust = available / wg
            severity = "critical" if exhaust <= th.EXHAUSTION_CRITICAL_S else "warning"
            facts.append(Fact(
                f"it stops only when each worker holds a copy: about {nw} x {gib(dataset)} = "
                f"{gib(bound)}, more than the {gib(available)} available: memory runs out in about "
                f"{duration(exhaust)}", "exhaustion_s", round(exhaust, 1)))
            reason = ("the DataLoader workers copy the dataset and run memory out in about "
                      f"{duration(exhaust)}")
        else:
            facts.append(Fact(
                f"it stops when each worker holds a copy: about {nw} x {gib(dataset)} = {gib(bound)}, "
                f"{'reached in about ' + duration(eta) if left else 'already reached'}; "
                f"{gib(available)} was available", "copy_bound_bytes", float(bound)))
    fix = Fix(
        text="store the dataset as one numpy array or torch tensor instead of Python objects (lists, "
        "dicts, strings): reading a row then writes no reference count, and the workers keep sharing "
        f"its pages instead of holding {nw} copies",
        where=lo.dataset_getitem or lo.site)
    return CopyOnRead(facts, fix, severity, reason)
