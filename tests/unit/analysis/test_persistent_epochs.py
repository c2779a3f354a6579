"""A loader with persistent workers: every epoch after the first reuses its iterator, and the
probes now say each epoch starts (DataLoader.__iter__), so a pass over the training loader under
no_grad (the training set's accuracy each epoch) is an evaluation pass, not training batches whose
waits made the loop 'wait 163% of the step'; and its epochs' first batches are no workers
starting again."""

from __future__ import annotations

from gpubottle.analysis.loaders import loader_infos, start_up_waits
from gpubottle.analysis.phases import carve, loader_passes
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import Backward, Batch, IterStarted, LoaderBuilt, OptimizerStep, Start


def _run() -> ChildEvents:
    recs: list = [Start(1, 0.0, 0.0),
                  LoaderBuilt({"id": 1, "num_workers": 2, "persistent_workers": True, "site": "t.py:3"})]
    t = 1.0
    for _epoch in range(3):
        recs.append(IterStarted(1, t, [11, 12], 1))
        for k in range(8):
            wait = 0.2 if k < 2 else 0.01  # the epoch's first batches wait for the prefetch to refill
            recs.append(Batch(1, t, t + wait, 0.001, 0))
            t += wait
            recs.append(Backward(t + 0.002, t + 0.005))
            recs.append(OptimizerStep(1, t + 0.01, t + 0.006))
            t += 0.01
        recs.append(Batch(1, t, t + 0.001, 0.0, 1))
        t += 0.001
        recs.append(IterStarted(1, t, [11, 12], 0))  # accuracy over the training set, no_grad
        for _ in range(8):
            recs.append(Batch(1, t, t + 0.03, 0.001, 0))
            t += 0.031
        recs.append(Batch(1, t, t + 0.001, 0.0, 1))
        t += 0.001
    ev = ChildEvents()
    for r in recs:
        ev.add(r)
    return ev


def test_a_no_grad_pass_over_the_training_loader_is_an_evaluation():
    ev = _run()
    passes = loader_passes(ev)
    assert [p.eval for p in passes] == [False, True] * 3
    carved = carve(ev)
    assert len(carved.eval_batches) == 3 * 9


def test_a_persistent_loaders_later_epochs_start_no_workers():
    ev = _run()
    carved = carve(ev)
    loaders, group_of = loader_infos(ev, carved.eval_batches)
    waits = start_up_waits(ev, loaders, group_of, ev.clock.intervals(), carved.eval_batches)
    assert sum(waits) == 0.0


def test_a_restart_whose_iter_call_starts_the_workers_is_input_not_a_pause() -> None:
    """Workers started again at step 25 (a worker_init_fn of 1 s): iter() takes 40 ms starting
    them, outside any fetch, then the first batch waits 1 s. The step is the input pipeline's
    cost, not a pause between steps; without the iter() record it read as one."""
    from gpubottle.analysis.steps import step_evidence
    from gpubottle.collect.events import ChildEvents
    from gpubottle.wire import Batch, IterStarted, OptimizerStep

    def events(with_iter: bool) -> ChildEvents:
        ev = ChildEvents()
        t = 10.0
        ev.add(IterStarted(1, t, [11, 12], 1, t - 0.01))
        for i in range(40):
            if i == 25:
                ev.add(Batch(1, t, t + 0.0005, 0.0, 1))  # the epoch's end
                t += 0.0005
                if with_iter:
                    ev.add(IterStarted(1, t + 0.04, [13, 14], 1, t))
                t += 0.04
                ev.add(Batch(1, t, t + 1.0, 0.0, 0))
                t += 1.0
            else:
                ev.add(Batch(1, t, t + 0.0005, 0.0, 0))
                t += 0.0005
            ev.add(OptimizerStep(1, t + 0.0025, t))
            t += 0.0025
        return ev

    assert step_evidence(events(True)).outliers == []
    assert step_evidence(events(False)).outliers == [25]
