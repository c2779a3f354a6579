"""analysis/zero_grads.py on event sequences shaped like the loops it reads: accumulation zeroed
before every micro-batch (the bug), zeroed once a step (either end), and a GAN's two optimizers."""

from __future__ import annotations

from gpubottle.analysis.zero_grads import grads_discarded
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import Backward, OptimizerStep, ZeroGrads


def _events(pattern: str) -> ChildEvents:
    """`pattern`: Z zero_grad, B backward, S optimizer step, one every 10 ms in a window."""
    ev = ChildEvents()
    calls = []
    for i, c in enumerate(pattern):
        t = 1.0 + i * 0.01
        if c == "Z":
            calls.append([t, f"train.py:{10 + i % 2}"])
        elif c == "B":
            ev.backwards.append(Backward(t - 0.005, t))
        else:
            ev.opt_steps.append(OptimizerStep(1, t))
    ev.zero_grads.append(ZeroGrads(0.99, 1.0 + len(pattern) * 0.01, calls))
    return ev


def test_accumulation_zeroed_before_every_micro_batch_clears_all_but_the_last() -> None:
    g = grads_discarded(_events("ZBZBZBZBS" * 3))
    assert g is not None and (g.backwards, g.discarded, g.steps) == (12, 9, 3)
    assert g.site in ("train.py:10", "train.py:11")


def test_zeroed_once_a_step_or_one_backward_a_step_or_two_optimizers_clear_nothing() -> None:
    for pattern in ("BBBBSZ" * 3, "ZBBBBS" * 3, "ZBS" * 4, "ZBSZBS" * 2):
        g = grads_discarded(_events(pattern))
        assert g is not None and g.discarded == 0, pattern
    assert grads_discarded(_events("ZBZB")) is None  # no step in the window: nothing to tell
    assert grads_discarded(ChildEvents()) is None
