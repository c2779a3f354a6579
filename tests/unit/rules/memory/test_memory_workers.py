"""Workers that hold their own copy of the dataset: spawned ones (each unpickles it) and forked ones
that copied it on read, told from each worker's own memory (USS), not from a steady climb."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import MemoryEvidence
from gpubottle.rules import diagnose
from gpubottle.rules import thresholds as th
from gpubottle.rules.memory.workers import HeldCopies, SpawnedCopies, copy_on_read

GIB = 1 << 30


def _ev(start: str, per_worker: int, workers: int = 4, limit: int = 16 * GIB, before: int | None = None):
    e = evidence(step_s=0.05, wait_s=0.01, num_workers=workers, per_worker=0.3, cores=8)
    e.loaders[0].start_method = start
    e.memory = MemoryEvidence(samples=100, total_bytes=limit, limit_bytes=limit, limit_source="physical",
                              peak_tree_bytes=GIB + workers * per_worker, peak_main_bytes=GIB,
                              min_available_bytes=limit // 2, peak_used_fraction=0.3,
                              per_worker_private_peak_bytes=per_worker, main_before_workers_bytes=before)
    return e


def _memory(report):
    return next((f for f in report.findings if f.category == v.OOM_RISK), None)


def test_spawned_workers_each_holding_the_array_are_named_with_the_fixes():
    ev = _ev("spawn", 900 << 20)  # 700 MB beyond a bare spawned worker's
    d = copy_on_read(ev)
    assert isinstance(d, SpawnedCopies) and d.workers == 4
    assert d.per_bytes == (900 << 20) - th.SPAWNED_WORKER_BASE_BYTES
    f = _memory(diagnose(ev))
    assert f is not None and ("worker_copies_bytes", float(4 * d.per_bytes)) in [
        (x.name, x.value) for x in f.evidence]
    assert f.fixes[0].where == "data.py:10"  # the dataset's __getitem__
    # Near the limit it is a warning; with room to spare, said as information.
    assert f.severity == "info"
    assert _memory(diagnose(_ev("spawn", 900 << 20, limit=6 * GIB))).severity == "warning"
    assert _memory(diagnose(_ev("spawn", 900 << 20, limit=3 * GIB))).severity == "critical"


def test_a_bare_spawned_worker_or_a_forked_one_that_shares_is_no_finding():
    assert _memory(diagnose(_ev("spawn", 161 << 20))) is None  # Python and torch: no dataset copy
    assert _memory(diagnose(_ev("fork", 9 << 20, before=GIB))) is None


def test_forked_workers_that_copied_the_dataset_are_named_without_a_steady_climb():
    ev = _ev("fork", 700 << 20, before=GIB)
    d = copy_on_read(ev)
    assert isinstance(d, HeldCopies) and (d.workers, d.per_bytes, d.dataset_bytes) == (4, 700 << 20, GIB)
    f = _memory(diagnose(ev))
    assert f is not None and f.fixes[0].where == "data.py:10"


def test_slow_copying_is_found_from_a_straight_rise_not_only_from_a_fast_one():
    """Issue 31.7: workers reading a few samples a second copy the dataset slowly (0.7 MB/s
    measured); a straight rise of their own memory over the measured steps still names it, and
    a small, crooked or short one does not."""
    from gpubottle.rules.memory.workers import GrowingCopies

    ev = _ev("fork", 20 << 20, workers=2, before=GIB)
    ev.memory.workers_growth_bytes_per_s, ev.memory.workers_growth_r2 = 0.7e6, 0.93
    ev.memory.workers_growth_span_s, ev.memory.workers_private_bytes = 18.5, 28 << 20
    d = copy_on_read(ev)
    assert isinstance(d, GrowingCopies) and d.bytes_per_s == 0.7e6 and d.bound_bytes == 2 * GIB
    # The main process growing faster beside it (the training's own allocations, the pages the
    # workers stop sharing): still named. (slow_copies.py: the tree 11-15 MB/s, the workers 0.6.)
    ev.memory.growth_bytes_per_s = 15e6
    assert isinstance(copy_on_read(ev), GrowingCopies)
    # A little faster than the growth threshold, the same straight rise: still named (a faster host
    # ran slow_copies.py's steps at 1.14 MB/s beside the tree's 13.5, and the finding was lost).
    ev.memory.workers_growth_bytes_per_s = 1.14e6
    assert ev.memory.workers_growth_bytes_per_s >= th.GROWTH_MIN_BYTES_PER_S
    assert isinstance(copy_on_read(ev), GrowingCopies)
    # A rise a little less straight, beside the tree's faster, crooked growth (an AMD EPYC host ran
    # the same shape at 1.07 MB/s, R^2 0.77, the tree 7.8 MB/s at R^2 0.41): still named.
    ev.memory.workers_growth_bytes_per_s, ev.memory.workers_growth_r2 = 1.07e6, 0.77
    ev.memory.growth_bytes_per_s = 7.8e6
    assert isinstance(copy_on_read(ev), GrowingCopies)
    ev.memory.workers_growth_bytes_per_s = 0.7e6
    for field, value in (("workers_growth_r2", 0.5), ("workers_growth_span_s", 5.0),
                         ("workers_growth_bytes_per_s", 0.1e6)):
        slow = _ev("fork", 20 << 20, workers=2, before=GIB)
        slow.memory.workers_growth_bytes_per_s, slow.memory.workers_growth_r2 = 0.7e6, 0.93
        slow.memory.workers_growth_span_s = 18.5
        setattr(slow.memory, field, value)
        assert not isinstance(copy_on_read(slow), GrowingCopies), field


def test_workers_growing_beside_a_dataset_that_holds_nothing_copy_nothing():
    """The H200's two-rank job: rank 0's one worker grew 1.45 MB/s (R^2 0.75) over a 9-s run from a
    dataset that makes its samples (torch.randn in __getitem__), beside a main process holding
    785 MB of torch and CUDA; read as 'the workers copy the dataset as they read it' and oom-risk.
    Workers copy only Python objects the dataset holds: with few, the growth is not a copy."""
    from gpubottle.rules.memory.workers import GrowingCopies

    def rank0(objects: int | None):
        ev = _ev("fork", 27 << 20, workers=1, before=785 << 20)
        m = ev.memory
        m.workers_growth_bytes_per_s, m.workers_growth_r2, m.workers_growth_span_s = 1.45e6, 0.75, 9.0
        m.workers_private_bytes, m.growth_bytes_per_s = 27 << 20, -32e6
        ev.loaders[0].dataset_objects = objects
        return ev

    assert copy_on_read(rank0(0)) is None and _memory(diagnose(rank0(0))) is None
    assert copy_on_read(rank0(th.COPY_ON_READ_MIN_OBJECTS - 1)) is None
    # A dataset of many Python objects, or one the census could not read: as before.
    assert isinstance(copy_on_read(rank0(400_000)), GrowingCopies)
    assert isinstance(copy_on_read(rank0(None)), GrowingCopies)
    # Spawned workers unpickle whatever the dataset holds, arrays too: the census does not apply.
    spawned = _ev("spawn", 900 << 20)
    spawned.loaders[0].dataset_objects = 0
    assert isinstance(copy_on_read(spawned), SpawnedCopies)
