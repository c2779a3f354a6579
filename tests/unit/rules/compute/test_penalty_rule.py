"""compute-bound where the loss adds a penalty over the parameters written tensor by tensor, from
made-up evidence shaped like a measured run (a 7-layer MLP, 30 tensors, Adam: the penalty's
forward 0.30 ms of a 5.7-7.1 ms step; with weight_decay instead 7.0 -> 5.9 ms): weight_decay in the
optimizer leads for a sum of squares, Adam's for AdamW (whose own is decoupled), one multi-tensor
op for another penalty; not below the share that counts."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import ModelCallCount, OptimizerWork, ParamPenalty
from gpubottle.rules import diagnose
from gpubottle.rules.thresholds import PARAM_PENALTY_FORWARD_SHARE


def _finding(penalty: ParamPenalty, cls: str = "torch.optim.adam.Adam"):
    ev = evidence(steps=150, step_s=0.006, main=1.98, cores=2.0)
    ev.model_calls = ModelCallCount("Net", "train.py:40", 1, 256, ["model"], penalty=penalty)
    ev.optimizer_work = OptimizerWork(cls, "train.py:35", 30, "foreach", True, 0.001)
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def _penalty(**kw: object) -> ParamPenalty:
    args: dict[str, object] = dict(site="train.py:44", tensors=30, ops=90, forward_s=0.0003,
                                   functions=["pow"], squared=True)
    args.update(kw)
    return ParamPenalty(**args)  # type: ignore[arg-type]


def test_an_l2_penalty_is_weight_decay_in_the_optimizer() -> None:
    f = _finding(_penalty())
    assert f.summary.endswith("and it computes a penalty over 30 parameter tensors one by one (5% of "
                              "the step in its forward alone)"), f.summary
    first = f.fixes[0]
    assert first.text.startswith("each step computes a penalty over the model's parameters one tensor "
                                 "at a time, at train.py:44 (30 tensors, 90 small ops"), first.text
    assert "Adam(..., weight_decay=2 * lam) adds inside its own multi-tensor update where Adam is " \
           "built (train.py:35)" in first.text, first.text
    assert first.where == "train.py:44" and first.expected_step_s is None
    assert first.text.endswith("try it and time it") and "torch.compile" in f.fixes[1].text


def test_with_adamw_the_same_training_is_adam_s_weight_decay() -> None:
    first = _finding(_penalty(), "torch.optim.adamw.AdamW").fixes[0]
    assert "torch.optim.Adam(..., weight_decay=2 * lam)" in first.text
    assert "AdamW's own weight_decay is decoupled" in first.text


def test_another_penalty_runs_over_all_tensors_at_once() -> None:
    first = _finding(_penalty(squared=False, functions=["abs"])).fixes[0]
    assert "torch._foreach_norm(params, 1)" in first.text and "weight_decay=2" not in first.text


def test_not_said_below_the_share_that_counts() -> None:
    f = _finding(_penalty(forward_s=0.006 * PARAM_PENALTY_FORWARD_SHARE / 2))
    assert not any("penalty" in x.text for x in f.fixes) and "penalty" not in f.summary


def test_on_a_loaded_machine_the_quick_steps_are_what_one_counted_step_compares_with() -> None:
    """Measured beside other runs: the mean step stretched to 25 ms while the counted step's penalty
    ran in 0.33 ms as on a quiet machine; the steps' quick tenth (12 ms) is the comparison."""
    ev = evidence(steps=150, step_s=0.025, main=1.2, cores=2.0)
    ev.steps.durations_s[:30] = [0.012] * 30
    ev.model_calls = ModelCallCount("Net", "train.py:40", 1, 256, ["model"],
                                    penalty=_penalty(forward_s=0.00033))
    ev.optimizer_work = OptimizerWork("torch.optim.adam.Adam", "train.py:35", 30, "foreach", True, 0.001)
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    assert f.fixes[0].text.startswith("each step computes a penalty"), f.fixes[0].text
    assert "3% of a step" in f.fixes[0].text
