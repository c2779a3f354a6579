"""DataLoader workers that hold copies of the dataset: forked workers that copy the pages they read
(copy-on-read: the run's memory grows while the script keeps nothing, and stops only when every
worker holds its own copy), forked workers that already hold copies, and spawned workers that each
unpickled their own. One of the host-memory rule's causes.

A forked worker shares its parent's pages until it writes to one. Reading a Python object writes
its reference count, so a dataset kept as Python objects (lists, dicts, strings) is copied into
each worker page by page as it is read; one numpy array or tensor is read without writes and stays
shared. The growth is bounded (workers x the dataset), which a straight-line projection misses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from gpubottle.evidence import Evidence
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader


@dataclass
class SpawnedCopies:
    """Workers started with spawn (macOS's and Windows' default) or forkserver unpickle the dataset
    each: an in-memory array is held once per worker (measured: a 700 MB array, 4 workers, PSS
    4.7 GB with spawn against 1.0 GB with fork)."""

    workers: int
    start_method: str
    own_bytes: int  # each worker's own memory
    per_bytes: int  # of it, beyond a spawned worker that loads nothing: its copy
    main_bytes: int  # the main process's peak
    peak_tree_bytes: int | None
    limit_bytes: int  # 0: unknown
    severity: str
    where: str | None
    exhaustion_s: float | None = None

    @property
    def peak_bytes(self) -> int:
        return self.main_bytes + self.workers * self.per_bytes


@dataclass
class GrowingCopies:
    """Forked workers' own memory growing while the script keeps nothing: copy-on-read."""

    workers: int
    bytes_per_s: float
    r2: float
    available_bytes: int
    dataset_bytes: int | None  # what the main process held before the workers started
    private_bytes: int  # the workers' own memory so far
    severity: str
    where: str | None
    exhaustion_s: float | None = None  # when the bound is beyond what is available

    @property
    def bound_bytes(self) -> int:
        return self.workers * (self.dataset_bytes or 0)

    @property
    def left_bytes(self) -> int:
        return max(0, self.bound_bytes - self.private_bytes)


@dataclass
class HeldCopies:
    """Forked workers that already hold a copy (the copying done, or too quick or uneven for a
    steady line): each one's own memory has reached a large part of what the main process held
    before they started."""

    workers: int
    per_bytes: int
    dataset_bytes: int
    where: str | None
    severity: str = "warning"
    exhaustion_s: float | None = None


# (Union, not `|`: evaluated at import, and Python 3.9 is supported)
CopyOnRead = Union[SpawnedCopies, GrowingCopies, HeldCopies]


def spawned_copies(ev: Evidence) -> SpawnedCopies | None:
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
    limit = m.limit_bytes or 0
    d = SpawnedCopies(nw, str(lo.start_method), own, per, m.peak_main_bytes or 0, m.peak_tree_bytes,
                      limit, "info", lo.dataset_getitem or lo.site)
    d.severity = ("critical" if limit and d.peak_bytes >= th.MEM_CRITICAL * limit else
                  "warning" if not limit or d.peak_bytes >= th.WORKER_COPIES_WARNING * limit else "info")
    return d


def copy_on_read(ev: Evidence) -> CopyOnRead | None:
    m = ev.memory
    lo = main_loader(ev)
    if m is None or lo is None or not lo.num_workers:
        return None
    if lo.start_method not in (None, "fork"):
        return spawned_copies(ev)  # spawned workers load their own dataset: nothing shared to copy
    if lo.dataset_objects is not None and lo.dataset_objects < th.COPY_ON_READ_MIN_OBJECTS:
        return None  # nothing a read could copy: the workers' memory grows for another reason
    if m.workers_growth_bytes_per_s is None:
        return _held(ev)
    wg = m.workers_growth_bytes_per_s
    r2 = m.workers_growth_r2 or 0.0
    fast = wg >= th.GROWTH_MIN_BYTES_PER_S and r2 >= th.COPY_ON_READ_R2
    if not fast and not _slowly_copying(ev):
        return _held(ev)
    # The workers are not what grows: no copy-on-read finding. Slow copying is small beside any
    # other growth by nature (two workers copying 0.7 MB/s beside a training whose main process
    # grew 4-11 MB/s, once its PSS was read right after the fork): its own straight rise names it,
    # and so it does a little faster (the same shape on a faster host: 1.14 MB/s beside 13.5, which
    # this guard dropped where 0.99 would have been named).
    if (fast and m.growth_bytes_per_s is not None and wg < th.COPY_ON_READ_SHARE * m.growth_bytes_per_s
            and not _slowly_copying(ev)):
        return None
    d = GrowingCopies(lo.num_workers, wg, m.workers_growth_r2 or 0.0, m.min_available_bytes or 0,
                      m.main_before_workers_bytes, m.workers_private_bytes or 0, "warning",
                      lo.dataset_getitem or lo.site)
    if d.dataset_bytes and d.left_bytes > 0.9 * d.available_bytes and d.available_bytes > 0:
        d.exhaustion_s = d.available_bytes / wg
        d.severity = "critical" if d.exhaustion_s <= th.EXHAUSTION_CRITICAL_S else "warning"
    return d


def _slowly_copying(ev: Evidence) -> bool:
    """Copy-on-read too slow for the growth threshold (a loader that reads a few samples a second):
    a straight, real rise of the workers' own memory while the main process holds a large dataset.
    Slow or not, it ends with every worker holding a copy."""
    m = ev.memory
    if m is None or m.workers_growth_bytes_per_s is None or not m.workers_growth_span_s:
        return False
    grown = m.workers_growth_bytes_per_s * m.workers_growth_span_s
    return (grown >= th.COPY_ON_READ_SLOW_GROWTH_BYTES
            and m.workers_growth_bytes_per_s >= th.COPY_ON_READ_SLOW_BYTES_PER_S
            and (m.workers_growth_r2 or 0.0) >= th.COPY_ON_READ_SLOW_R2
            and (m.main_before_workers_bytes or 0) >= th.WORKER_COPY_MIN_BYTES)


def _held(ev: Evidence) -> HeldCopies | None:
    m, lo = ev.memory, main_loader(ev)
    if m is None or lo is None or not lo.num_workers:
        return None
    per, dataset = m.per_worker_private_peak_bytes, m.main_before_workers_bytes
    if per is None or not dataset or per < th.WORKER_COPY_MIN_BYTES or per < th.COPIED_SHARE * dataset:
        return None
    return HeldCopies(lo.num_workers, per, dataset, lo.dataset_getitem or lo.site)
