"""Steps that vary by their batches (a GRU over bucketed sequences of 8 to 200 steps: 10 ms to
0.9 s, its backward slowed by denormal floats past ~150): the long ones are steps, not pauses
between them, and a heavier probe that fell on one did not cost the run its length."""

from __future__ import annotations

import pytest

from gpubottle.analysis.own_cost import probed_slowed
from gpubottle.analysis.steps import step_evidence
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import Backward, OptimizerStep, Perturbed, Start


def _events(steps: list[tuple[float, float]], perturbed: tuple[float, float] | None = None) -> ChildEvents:
    """Steps as (their length, of it the backward's); the forward 2 ms before each backward."""
    ev = ChildEvents()
    ev.add(Start(1, 100.0, 0.0))
    t = 101.0
    for dur, back in steps:
        b0 = t + dur - back - 0.001
        ev.add(Backward(b0, b0 + back))
        ev.add(OptimizerStep(1, t + dur, t + dur - 0.0005))
        t += dur
    if perturbed is not None:
        ev.add(Perturbed(*perturbed, "model-calls"))
    return ev


def _lengths(long_every: int = 7, long_s: float = 0.9, outside: bool = False) -> list[tuple[float, float]]:
    out = []
    for i in range(120):
        long = i >= 10 and i % long_every == 0
        dur = long_s if long else 0.03
        out.append((dur, 0.02 if outside or not long else long_s - 0.01))
    return out


def test_a_long_step_spent_in_its_own_backward_is_a_step_not_a_pause() -> None:
    st = step_evidence(_events(_lengths()))
    assert st.outliers == []
    # ...where the same time outside its backward and optimizer is a pause (something else ran)
    st = step_evidence(_events(_lengths(outside=True)))
    assert st.outliers == [i for i in range(10, 120) if i % 7 == 0]


def test_a_probe_on_a_step_long_by_its_batch_is_charged_only_beyond_the_steps_spread() -> None:
    lengths = _lengths(long_every=5)
    ev = _events(lengths, perturbed=(101.0 + 0.03 * 10 + 0.001, 101.0 + 0.03 * 10 + 0.89))
    st = step_evidence(ev)
    (i,) = st.instrumented
    assert i == 10 and lengths[i][0] == 0.9
    work = st.net_durations()
    keep = st.measured_indices()
    probed = [0.0] * len(work)
    probed[i] = 0.9
    assert probed_slowed(st, work, keep, probed) == pytest.approx(0.0, abs=1e-6)
    # A steady run's probed step 0.3 s longer than the rest: that is the probe's
    steady = [(0.03, 0.02)] * 120
    steady[20] = (0.33, 0.02)
    st = step_evidence(_events(steady, perturbed=(101.0 + 0.03 * 20 + 0.001, 101.0 + 0.03 * 20 + 0.3)))
    work, keep = st.net_durations(), st.measured_indices()
    probed = [0.0] * len(work)
    probed[st.instrumented[0]] = 0.3
    assert probed_slowed(st, work, keep, probed) == pytest.approx(0.3, abs=0.01)
