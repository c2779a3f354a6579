"""What the optimizer probe reads from real torch optimizers when they are built (dtype, tensors,
which step implementation torch will run, whether it can fuse), a --try-fixes trial's fused=True,
and the measured-window analysis of the optimizer's step time."""

from __future__ import annotations

import pytest
import torch

from gpubottle import vocabulary as v
from gpubottle.analysis.optimizers import optimizer_work
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import StepEvidence
from gpubottle.probes.optimizer_info import fused_kwargs, params_info
from gpubottle.probes.trial import fuse_optimizers
from gpubottle.wire import OptimizerBuilt, OptimizerStep


def _params() -> list[torch.nn.Parameter]:
    return list(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4)).parameters())


def test_an_optimizers_parameters_say_their_dtype_by_elements():
    big, small = torch.nn.Linear(64, 64).double(), torch.nn.Linear(2, 2)
    opt = torch.optim.SGD([*big.parameters(), *small.parameters()], lr=0.1)
    assert params_info(opt).dtype == "float64" and params_info(opt).tensors == 4
    assert params_info(torch.optim.SGD(small.parameters(), lr=0.1)).dtype == "float32"


def test_the_step_torch_will_run_is_read_as_torch_resolves_it_on_a_cpu():
    info = params_info(torch.optim.AdamW(_params()))
    assert (info.tensors, info.impl, info.can_fuse) == (4, v.OPT_FOR_LOOP, True)  # CPU default
    assert params_info(torch.optim.AdamW(_params(), foreach=True)).impl == v.OPT_FOREACH
    assert params_info(torch.optim.SGD(_params(), lr=0.1, fused=True)).impl == v.OPT_FUSED
    assert params_info(torch.optim.Adam(_params(), differentiable=True)).impl == v.OPT_FOR_LOOP
    rms = params_info(torch.optim.RMSprop(_params()))
    assert (rms.impl, rms.can_fuse) == (v.OPT_FOR_LOOP, False)  # foreach only
    for own in (torch.optim.LBFGS(_params()), torch.optim.SparseAdam(_params())):
        assert (params_info(own).impl, params_info(own).can_fuse) == (None, False)

    class Mine(torch.optim.Adam):  # the script's subclass with a constructor of its own
        def __init__(self, params) -> None:
            super().__init__(params, lr=1e-3, foreach=False)

    assert params_info(Mine(_params()))[2:] == (v.OPT_FOR_LOOP, True, 1)


def test_a_fused_trial_builds_every_fusable_optimizer_fused_and_nothing_else(monkeypatch):
    for name in ("Adam", "AdamW", "SGD", "Adagrad", "RMSprop"):
        cls = getattr(torch.optim, name)
        monkeypatch.setattr(cls, "__init__", cls.__init__)  # restored after the test
    fuse_optimizers()
    fuse_optimizers()  # twice (a second gpubottle.profile): wrapped once
    assert params_info(torch.optim.AdamW(_params(), foreach=True)).impl == v.OPT_FUSED
    assert params_info(torch.optim.SGD(_params(), lr=0.1)).impl == v.OPT_FUSED
    assert params_info(torch.optim.Adam(_params(), differentiable=True)).impl == v.OPT_FOR_LOOP
    assert params_info(torch.optim.RMSprop(_params())).impl == v.OPT_FOR_LOOP
    opt = torch.optim.Adagrad(_params())
    assert params_info(opt).impl == v.OPT_FUSED
    opt.param_groups[0]["params"][0].grad = torch.ones(4, 4)
    opt.step()  # and it steps
    assert fused_kwargs(torch.optim.RMSprop, {"foreach": True}) == {"foreach": True}
    assert fused_kwargs(torch.optim.Adam, {"foreach": True, "lr": 1.0}) == {"lr": 1.0, "fused": True}


def _steps(lo: float, hi: float) -> StepEvidence:
    return StepEvidence(source="optimizer", measured_from=lo, measured_to=hi)


def test_the_optimizers_step_time_is_its_median_in_the_measured_window():
    ev = ChildEvents()
    ev.optimizers = [OptimizerBuilt(7, "torch.optim.adamw.AdamW", "train.py:17", "float32", 242,
                                    v.OPT_FOR_LOOP, True)]
    # Warm-up's slow first step and a background thread's steps are outside the measure.
    ev.opt_steps = [OptimizerStep(7, 0.5, 0.0)] + [
        OptimizerStep(7, 1.0 + i * 0.1 + d, 1.0 + i * 0.1) for i, d in enumerate([0.01, 0.012, 0.05])
    ] + [OptimizerStep(9, 1.3, 1.0, thread=123)]
    got = optimizer_work(ev, _steps(0.9, 2.0))
    assert got is not None and got.step_s == pytest.approx(0.012)
    assert (got.cls, got.site, got.tensors, got.impl, got.can_fuse) == (
        "torch.optim.adamw.AdamW", "train.py:17", 242, v.OPT_FOR_LOOP, True)
    # A GAN's two optimizers, each stepping once a step: both count.
    ev.opt_steps += [OptimizerStep(8, 1.0 + i * 0.1 + 0.004, 1.0 + i * 0.1) for i in range(3)]
    got = optimizer_work(ev, _steps(0.9, 2.0))
    assert got is not None and got.step_s == pytest.approx(0.016)
    assert optimizer_work(ev, _steps(3.0, 4.0)) is None
    assert optimizer_work(ev, StepEvidence(source="optimizer")) is None


def test_a_new_optimizer_each_step_is_one_step_call_a_step_though_python_reuses_their_ids():
    """optimizer_in_loop.py: a new Adam every step, its id one of two addresses in turn. Summed
    as two optimizers each stepping every step, the step read 157% of the training step."""
    ev = ChildEvents()
    ev.opt_steps = [OptimizerStep(7 + i % 2, 1.0 + i * 0.1 + 0.008, 1.0 + i * 0.1) for i in range(8)]
    steps = StepEvidence(source="optimizer", durations_s=[0.1] * 8, measured_from=0.95, measured_to=1.9)
    got = optimizer_work(ev, steps)
    assert got is not None and got.step_s == pytest.approx(0.008) and got.calls == 1
    # A GAN's two, each once a step, over the same steps: both count.
    ev.opt_steps += [OptimizerStep(9, 1.0 + i * 0.1 + 0.052, 1.0 + i * 0.1 + 0.05) for i in range(8)]
    got = optimizer_work(ev, steps)
    assert got is not None and got.step_s == pytest.approx(0.01) and got.calls == 2


def test_a_fix_goes_to_the_line_that_writes_the_optimizer_not_a_frameworks_call(tmp_path):
    """Built inside a framework, the probe's user line is the script's call into it
    (`trainer.train()`): no fix can set fused= there, so no line is named."""
    from gpubottle.analysis.optimizers import builds_here

    script = tmp_path / "train.py"
    script.write_text("opt = torch.optim.AdamW(model.parameters())\n"
                      "opt = getattr(torch.optim, name)(params)\n"
                      "trainer.train()\n")
    assert builds_here(f"{script}:1", "torch.optim.adamw.AdamW")
    assert builds_here(f"{script}:2", "torch.optim.adamw.AdamW")
    assert not builds_here(f"{script}:3", "torch.optim.adamw.AdamW")
    assert builds_here(f"{tmp_path}/gone.py:3", "torch.optim.adamw.AdamW")  # unreadable: kept
    assert not builds_here(None, "torch.optim.adamw.AdamW")


def test_the_groups_are_counted_as_the_optimizer_holds_them() -> None:
    """Layer-wise learning rates as a group per tensor: foreach and fused batch one group's tensors
    at a time (rules/compute/words.py says so where the groups are many and small)."""
    params = _params()
    opt = torch.optim.AdamW([{"params": [p], "lr": 1e-3 * (i + 1)} for i, p in enumerate(params)])
    info = params_info(opt)
    assert (info.tensors, info.groups) == (len(params), len(params))
    assert params_info(torch.optim.AdamW(_params())).groups == 1
