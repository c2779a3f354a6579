"""discarded-gradients from evidence shaped like the measured loop (4 micro-batches of 32, zero_grad
before each backward: 9 of 12 backward passes cleared over 3 steps)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, GradsDiscarded
from gpubottle.rules import diagnose


def _said(g: GradsDiscarded | None) -> list:
    ev: Evidence = evidence(steps=60, step_s=0.0037)
    ev.grads_discarded = g
    return [f for f in diagnose(ev).findings if f.category == v.DISCARDED_GRADIENTS]


def test_backward_passes_cleared_before_the_step_are_said_at_the_zero_grad() -> None:
    [f] = _said(GradsDiscarded(12, 9, 3, "train.py:10"))
    assert f.severity == "warning"
    assert f.summary.startswith("zero_grad() at train.py:10 clears gradients before the optimizer step "
                                "uses them: 9 of 12 backward passes (75%) over 3 steps"), f.summary
    [fix] = f.fixes
    assert fix.where == "train.py:10" and fix.text.startswith("zero the gradients once a step")
    assert fix.expected is None


def test_none_or_few_cleared_is_not_said() -> None:
    assert _said(None) == [] and _said(GradsDiscarded(12, 0, 3, None)) == []
    assert _said(GradsDiscarded(12, 2, 3, "train.py:10")) == []  # under a quarter
    assert _said(GradsDiscarded(12, 3, 3, "train.py:10"))


def test_gradients_nothing_clears_are_said_at_the_backward() -> None:
    """The window's first backward added to the gradient the step before had used (a loop with no
    zero_grad(): on this VM its loss rose over two epochs): uncleared-gradients, at the backward,
    with zero_grad() once a step and no time promised; not where a zero_grad() discarded instead."""
    ev: Evidence = evidence(steps=60, step_s=0.0037)
    ev.grads_discarded = GradsDiscarded(3, 0, 3, None, kept=True, backward_site="train.py:14")
    [f] = [f for f in diagnose(ev).findings if f.category == v.UNCLEARED_GRADIENTS]
    assert f.summary.startswith("nothing clears the gradients between optimizer steps: the backward at "
                                "train.py:14 adds to the gradients of every step before it"), f.summary
    [fix] = f.fixes
    assert fix.where == "train.py:14" and fix.text.startswith("call optimizer.zero_grad() once a step")
    assert fix.expected is None and fix.expected_step_s is None
    ev.grads_discarded = GradsDiscarded(3, 0, 3, None)  # cleared (kept False): nothing said
    assert not [f for f in diagnose(ev).findings if f.category == v.UNCLEARED_GRADIENTS]
