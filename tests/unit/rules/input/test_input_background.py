"""Batches a background thread fetches (probes record each fetch's and each optimizer step's
thread): not the loop's waits, and data-starved on the loop's own thread's time off the CPU."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.loaders import loader_infos
from gpubottle.analysis.phases import carve
from gpubottle.analysis.steps import step_evidence
from gpubottle.collect.events import ChildEvents
from gpubottle.rules import diagnose
from gpubottle.wire import Batch, LoaderBuilt, OptimizerStep

THREAD = 140001


def _events(fetch_thread: int | None) -> ChildEvents:
    """40 steps of 10 ms; each batch's fetch takes 9 ms, overlapping the step before it."""
    ev = ChildEvents()
    ev.add(LoaderBuilt({"id": 1, "site": "train.py:44", "num_workers": 0, "batch_size": 32}))
    for k in range(40):
        t = 100.0 + 0.01 * k
        ev.add(Batch(1, t - 0.009, t, 0.001, 0, None, fetch_thread))
        ev.add(OptimizerStep(1, t + 0.01, t + 0.009))
    return ev


def test_a_background_threads_fetches_are_not_the_loops_waits():
    ev = _events(THREAD)
    carved = carve(ev)
    steps = step_evidence(ev, carved)
    assert max(steps.input_wait_s) == 0.0
    [lo], _ = loader_infos(ev, carved.eval_batches, carved.off_loop)
    assert lo.off_loop_fetch_s is not None and abs(lo.off_loop_fetch_s - 0.009) < 1e-6
    ev = _events(None)  # fetched on the loop's own thread: its waits, as before
    carved = carve(ev)
    assert sum(step_evidence(ev, carved).input_wait_s) > 0.3
    [lo], _ = loader_infos(ev, carved.eval_batches, carved.off_loop)
    assert lo.off_loop_fetch_s is None


def test_waiting_for_the_thread_is_data_starved_with_workers_to_try():
    ev = evidence(step_s=0.0099, main=1.6, tree=1.6, cores=2, torch_threads=2)
    assert ev.cpu is not None
    ev.cpu.main_thread_cores, ev.cpu.main_run_queue = 0.48, 0.09
    ev.loaders[0].off_loop_fetch_s = 0.0091
    f = diagnose(ev).findings[0]
    assert f.category == v.DATA_STARVED and f.share == 0.43, f
    assert f.summary.startswith("the loop waits about 43% of each step for batches a background "
                                "thread fetches from the DataLoader at train.py:42 (9.1 ms a batch)")
    [fix] = f.fixes
    assert fix.change == {"num_workers": [0, 2]} and fix.where == "train.py:42" and "try it" in fix.text
    # A thread that keeps well ahead (fetches far shorter than a step): not the loop's pace.
    ev.loaders[0].off_loop_fetch_s = 0.002
    assert diagnose(ev).primary == v.COMPUTE_BOUND
