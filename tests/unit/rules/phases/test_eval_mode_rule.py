"""eval-mode-training's words and bounds, from evidence shaped like the measured run (350 of 400
steps after evaluate()'s model.eval(), no model.train() after it)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import EvalModeTraining, Evidence
from gpubottle.rules import diagnose


def _ev(steps: int = 350, of: int = 400, function: str | None = "evaluate") -> Evidence:
    ev = evidence(steps=of, step_s=0.0016)
    ev.eval_mode = EvalModeTraining(steps, of, "train.py:11", function,
                                    "train.py:23" if function else None)
    return ev


def _said(ev: Evidence) -> list:
    return [f for f in diagnose(ev).findings if f.category == v.EVAL_MODE_TRAINING]


def test_steps_trained_in_eval_mode_are_said_at_the_loops_call_of_the_evaluation() -> None:
    [f] = _said(_ev())
    assert f.severity == "warning"
    assert f.summary.startswith("model.eval() at train.py:11 (in evaluate(), called at train.py:23) "
                                "leaves the model in eval mode with no model.train() after it: 350 of "
                                "the 400 training steps (88%) ran with dropout off"), f.summary
    [fix] = f.fixes
    assert fix.where == "train.py:23" and fix.text.startswith("call model.train() again after evaluate()")
    assert fix.expected is None and not fix.change
    # An eval() the script makes at its top level: said at that line.
    [f] = _said(_ev(function=None))
    assert f.fixes[0].where == "train.py:11" and "after the evaluation" in f.fixes[0].text


def test_a_few_steps_in_eval_mode_are_not_said() -> None:
    assert _said(_ev(steps=9, of=20)) == []  # under EVAL_MODE_MIN_STEPS
    assert _said(_ev(steps=39, of=400)) == []  # under a tenth of the steps
    assert _said(_ev(steps=40, of=400))
