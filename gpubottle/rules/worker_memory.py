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
from gpubottle.units import duration, gib, pct


@dataclass
class CopyOnRead:
    facts: list[Fact]
    fix: Fix
    severity: str
    reason: str
    exhaustion_s: float | None = None  # projected seconds until memory runs out


def spawned_copies(ev: Evidence) -> CopyOnRead | None:
    """Workers started with spawn (macOS's and Windows' default) or forkserver unpickle the dataset
    each: an in-memory array is held once per worker (measured: a 700 MB array, 4 workers, PSS
    4.7 GB with spawn against 1.0 GB with fork)."""
    m = ev.memory
    lo = main_loader(ev)
    if m is None or lo is None or not lo.num_workers or lo.start_method not in ("spawn", "forkserver"):
        return None
    own = m.per_worker_private_peak_bytes
    nw = lo.num_workers
    # A spawned worker holds Python, torch and the script of its own whatever it reads.
    per = (own or 0) - th.SPAWNED_WORKER_BASE_BYTES
    if own is None or per < th.WORKER_COPY_MIN_BYTES or nw * per < th.WORKER_COPIES_MIN_BYTES:
        return None
    started = {"spawn": "spawned", "forkserver": "forkserver-started"}.get(str(lo.start_method), "")
    limit = m.limit_bytes or 0
    peak = (m.peak_main_bytes or 0) + nw * per
    facts = [Fact(
        f"each of the {nw} DataLoader workers ({lo.start_method}) holds {gib(own)} of its own, "
        f"about {gib(per)} more than a {started} worker that loads nothing: it unpickled its own copy "
        f"of the dataset; {gib(nw * per)} across them, the run's peak {gib(m.peak_tree_bytes or peak)}"
        + (f" of {gib(limit)}" if limit else ""), "worker_copies_bytes", float(nw * per))]
    if limit:
        facts.append(Fact(f"with {2 * nw} workers it would need about "
                          f"{gib((m.peak_main_bytes or 0) + 2 * nw * per)}; each worker adds {gib(per)}",
                          "per_worker_bytes", float(per)))
    severity = ("critical" if limit and peak >= th.MEM_CRITICAL * limit else
                "warning" if not limit or peak >= th.WORKER_COPIES_WARNING * limit else "info")
    fix = Fix(
        text=f"every {started} worker loads the dataset again: keep its data where workers "
        "share it instead: save the array to a file once, keep only its path in the dataset and "
        "open it with np.load(path, mmap_mode='r') on first use in __getitem__ (each worker maps "
        "the same file; an array passed in, even a memmap, is pickled whole into every worker), or "
        "hold it as a torch tensor (passed through shared memory), or "
        "multiprocessing_context='fork' on Linux when the main process has not used CUDA yet; or "
        "fewer workers (each holds a copy)",
        where=lo.dataset_getitem or lo.site)
    return CopyOnRead(facts, fix, severity, f"each {started} DataLoader worker holds its own "
                      f"copy of the dataset ({nw} x {gib(per)})")


def copy_on_read(ev: Evidence) -> CopyOnRead | None:
    m = ev.memory
    lo = main_loader(ev)
    if m is None or lo is None or not lo.num_workers:
        return None
    if lo.start_method not in (None, "fork"):
        return spawned_copies(ev)  # spawned workers load their own dataset: nothing shared to copy
    if m.workers_growth_bytes_per_s is None:
        return _copied(ev)
    wg = m.workers_growth_bytes_per_s
    if wg < th.GROWTH_MIN_BYTES_PER_S or (m.workers_growth_r2 or 0.0) < th.COPY_ON_READ_R2:
        return _copied(ev)
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
    return CopyOnRead(facts, _array_fix(lo.dataset_getitem or lo.site, nw), severity, reason,
                      next((f.value for f in facts if f.name == "exhaustion_s"), None))


def _array_fix(where: str | None, nw: int) -> Fix:
    return Fix(
        text="store the dataset as one numpy array or torch tensor instead of Python objects (lists, "
        "dicts, strings): reading a row then writes no reference count, and the workers keep sharing "
        f"its pages instead of holding {nw} copies",
        where=where)


def _copied(ev: Evidence) -> CopyOnRead | None:
    """Forked workers that already hold a copy of the dataset (the copying done, or too quick or
    uneven for a steady line): each one's own memory, which a forked worker that only reads arrays
    keeps small, has reached a large part of what the main process held before they started."""
    m, lo = ev.memory, main_loader(ev)
    if m is None or lo is None or not lo.num_workers:
        return None
    per, dataset = m.per_worker_private_peak_bytes, m.main_before_workers_bytes
    if per is None or not dataset or per < th.WORKER_COPY_MIN_BYTES or per < th.COPIED_SHARE * dataset:
        return None
    nw = lo.num_workers
    facts = [Fact(
        f"each of the {nw} forked DataLoader workers holds {gib(per)} of its own, {pct(per / dataset)} "
        f"of the {gib(dataset)} the main process held before they started: they copied the pages of "
        "the dataset they read (reading a Python object writes its reference count)",
        "worker_copies_bytes", float(nw * per))]
    return CopyOnRead(facts, _array_fix(lo.dataset_getitem or lo.site, nw), "warning",
                      f"the forked DataLoader workers hold copies of the dataset ({nw} x {gib(per)})")
