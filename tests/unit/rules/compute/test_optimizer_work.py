"""The optimizer's step in a compute-bound loop, from made-up evidence: a per-tensor loop (or a
foreach step where a fused one exists) taking a quarter of the step or more is the first fix, at the
line that built it; a fused step, a small share, or an optimizer of its own are not offered one."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import OptimizerWork
from gpubottle.rules import diagnose
from gpubottle.rules import thresholds as th


def _compute(work: OptimizerWork | None) -> object:
    ev = evidence(steps=50, step_s=0.02, main=1.0, cores=2.0)
    ev.optimizer_work = work
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def _adamw(impl: str | None, step_s: float, can_fuse: bool = True, cls: str = "torch.optim.adamw.AdamW"
           ) -> OptimizerWork:
    return OptimizerWork(cls, "train.py:17", 242, impl, can_fuse, step_s)


def test_a_per_tensor_loop_taking_half_the_step_is_offered_fused_first_at_its_line() -> None:
    f = _compute(_adamw(v.OPT_FOR_LOOP, 0.011))
    fix = f.fixes[0]
    assert fix.change == {"fused": [None, True]} and fix.where == "train.py:17"
    assert fix.text.startswith("the optimizer's step is 55% of each step and runs as a per-tensor loop "
                               "(torch's default on a CPU, or foreach=False): try AdamW(..., fused=True)")
    assert "(--try-fixes does)" in fix.text
    assert f.fixes[-1].text.startswith("run the math faster")  # still offered, after it
    assert f.summary == ("the main process computes 100% of step time, and the optimizer's step is 55% "
                         "of it (AdamW, a per-tensor loop)")
    [fact] = [x for x in f.evidence if x.name == "optimizer_share"]
    assert fact.text == ("AdamW.step() takes 11.0 ms of each step (55%): it updates its 242 parameter "
                         "tensors one at a time in a Python loop, each with several elementwise ops, "
                         "each op a pass over the tensor's memory")
    # A GAN's two optimizers, each once a step: their calls together, said as two.
    gan = OptimizerWork("torch.optim.adamw.AdamW", "train.py:17", 242, v.OPT_FOR_LOOP, True, 0.011, 2)
    [fact] = [x for x in _compute(gan).evidence if x.name == "optimizer_share"]
    assert fact.text.startswith("2 optimizers' step() calls (AdamW among them) take 11.0 ms of each step")


def test_foreach_is_offered_fused_and_a_loop_that_cannot_fuse_is_offered_foreach() -> None:
    fix = _compute(_adamw(v.OPT_FOREACH, 0.006)).fixes[0]
    assert fix.change == {"fused": [None, True]} and "runs as foreach: try AdamW" in fix.text
    fix = _compute(_adamw(v.OPT_FOR_LOOP, 0.006, False, "torch.optim.rmsprop.RMSprop")).fixes[0]
    assert fix.change == {"foreach": [False, True]} and "RMSprop(..., foreach=True)" in fix.text
    assert "--try-fixes" not in fix.text  # not a setting a trial can make


def test_no_optimizer_fix_where_it_is_fused_small_or_its_own() -> None:
    under = th.OPTIMIZER_LOOP_SHARE * 0.02 * 0.9
    for work in (_adamw(v.OPT_FUSED, 0.012), _adamw(v.OPT_FOR_LOOP, under),
                 _adamw(None, 0.012, False, "torch.optim.lbfgs.LBFGS"),
                 _adamw(v.OPT_FOREACH, 0.012, False), None):
        f = _compute(work)
        assert not any(set(x.change) & {"fused", "foreach"} for x in f.fixes), (work, f.fixes)
        assert not any(x.name == "optimizer_share" for x in f.evidence)


def test_an_optimizer_a_framework_builds_is_fixed_by_its_option_at_no_line() -> None:
    fix = _compute(OptimizerWork("torch.optim.adamw.AdamW", None, 242, v.OPT_FOR_LOOP, True, 0.011)).fixes[0]
    assert fix.where is None and "AdamW(..., fused=True) where the optimizer is built" in fix.text


def test_a_group_per_tensor_is_said_with_the_fix_fused_gains_more_merged_foreach_may_lose() -> None:
    """group_per_tensor.py's shape: 146 tensors in 146 groups (layer-wise learning rates). fused
    batches one group at a time (the run 15.4 s, 11.8 s fused, 10.6 s fused in 50 groups); foreach
    on one tensor a group was slower than the loop (18.7 s): said so, merge first. A few groups
    (decay and no decay) are not this."""
    split = OptimizerWork("torch.optim.adamw.AdamW", "train.py:17", 146, v.OPT_FOR_LOOP, True, 0.011,
                          groups=146)
    f = _compute(split)
    [fact] = [x for x in f.evidence if x.name == "optimizer_share"]
    assert "its 146 parameter tensors (in 146 parameter groups) one at a time" in fact.text
    fix = f.fixes[0]
    assert fix.change == {"fused": [None, True]}
    assert "Its 146 tensors sit in 146 parameter groups (one each), and fused batches" in fix.text
    assert "merge the groups that share their settings" in fix.text and "10.6 s fused in 50" in fix.text
    rms = OptimizerWork("torch.optim.rmsprop.RMSprop", "train.py:17", 146, v.OPT_FOR_LOOP, False, 0.011,
                        groups=73)
    fix = _compute(rms).fixes[0]
    assert fix.change == {"foreach": [False, True]} and "(2.0 tensors a group)" in fix.text
    assert "it can be slower than the loop" in fix.text and "merge the groups" in fix.text
    for groups in (2, None):
        few = OptimizerWork("torch.optim.adamw.AdamW", "train.py:17", 146, v.OPT_FOR_LOOP, True, 0.011,
                            groups=groups)
        assert "parameter groups" not in _compute(few).fixes[0].text
