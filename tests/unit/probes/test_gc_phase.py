"""The full collection gpubottle moves to the script's first step (probes/gc_phase.py): run where
gen 2 is due and the script's last full one was cheap, never where the script turned collection
off; the watch's timing of full collections on a fake clock; the seconds are gpubottle's."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gpubottle.options import ChildConfig
from gpubottle.probes import gc_phase
from gpubottle.probes.gc_phase import GcWatch, collect_if_due
from gpubottle.probes.hooks import StepHooks


@pytest.fixture
def quiet_gc() -> Iterator[None]:
    """No automatic collection during a test (gen 0's threshold out of reach); restored after."""
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(10**9, before[1], before[2])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        (gc.enable if enabled else gc.disable)()


def _gen2_due(due: bool) -> None:
    count = gc.get_count()[2]
    t0, t1, _ = gc.get_threshold()
    gc.set_threshold(t0, t1, count if due else count + 1)


def _full_runs() -> int:
    return int(gc.get_stats()[2]["collections"])


def test_a_due_full_collection_runs_and_its_seconds_are_returned(quiet_gc):
    watch = GcWatch(lambda: 0.0)
    _gen2_due(True)
    before = _full_runs()
    took = collect_if_due(watch)
    assert _full_runs() == before + 1
    assert took > 0.0
    assert gc.get_count()[2] == 0  # the script's gen-2 count starts afresh


def test_none_runs_where_gen2_is_not_due_or_collection_is_off_or_the_last_was_dear(quiet_gc):
    watch = GcWatch(lambda: 0.0)
    before = _full_runs()
    _gen2_due(False)
    assert collect_if_due(watch) == 0.0
    _gen2_due(True)
    gc.disable()
    assert collect_if_due(watch) == 0.0
    gc.enable()
    watch.full_s = gc_phase.EARLY_GC_MAX_S + 0.01
    assert collect_if_due(watch) == 0.0
    assert _full_runs() == before


def test_the_watch_times_full_collections_outside_a_flush_on_its_clock():
    clock = [5.0]
    watch = GcWatch(lambda: clock[0])
    watch("start", {"generation": 1})
    clock[0] += 0.01
    watch("stop", {"generation": 1})
    assert watch.full_s == 0.0 and watch.last == pytest.approx(5.01)
    watch("start", {"generation": 2})
    clock[0] += 0.12
    watch("stop", {"generation": 2})
    assert watch.full_s == pytest.approx(0.12) and watch.last == pytest.approx(5.13)
    watch.flushing = __import__("threading").get_ident()  # the flush's own: its CPU, not this
    watch("start", {"generation": 2})
    clock[0] += 1.0
    watch("stop", {"generation": 2})
    assert watch.full_s == pytest.approx(0.12) and watch.last == pytest.approx(5.13)


def test_the_first_step_runs_it_once_and_keeps_its_seconds_apart_from_the_steady_calls():
    hooks = StepHooks()
    calls: list[int] = []

    def first() -> float:
        calls.append(hooks.steps)
        return 0.14

    hooks.at_first_step = first
    for _ in range(3):
        hooks.on_step()
    assert calls == [1]
    assert hooks.moved_gc_s == 0.14 and hooks.spent_s < 0.01
    hooks.reset(ChildConfig(events=""))  # gpubottle.profile() used again: its own first step
    hooks.on_step()
    assert calls == [1, 1] and hooks.moved_gc_s == 0.14
