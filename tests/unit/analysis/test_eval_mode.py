"""analysis/eval_mode.py and the probe's reading of modules (probes/modes.py), on records shaped like
a measured run (/tmp's evalmode.py: 8 epochs of 50 steps, evaluate() calling model.eval() after each
and model.train() called once before the loop: 350 of 400 steps in eval mode)."""

from __future__ import annotations

import torch
from torch import nn

from gpubottle.analysis.eval_mode import eval_mode_training
from gpubottle.collect.events import ChildEvents
from gpubottle.probes.modes import _ModuleKinds
from gpubottle.wire import ModeSet, OptimizerStep


def _events(train_each_epoch: bool = False, moded: int = 1, trained: int = 1) -> ChildEvents:
    ev = ChildEvents()
    t = 0.0
    ev.modes.append(ModeSet(t, 1, "train.py:18", "<module>", None))
    for epoch in range(8):
        if train_each_epoch and epoch:
            ev.modes.append(ModeSet(t, 1, "train.py:20", "<module>", None))
        for _ in range(50):
            t += 0.01
            ev.opt_steps.append(OptimizerStep(1, t))
        t += 0.01
        ev.modes.append(ModeSet(t, 0, "train.py:11", "evaluate", "train.py:23", moded, trained))
        t += 0.01
    return ev


def test_steps_after_an_eval_with_no_train_are_counted_by_that_eval() -> None:
    e = eval_mode_training(_events())
    assert e is not None and (e.steps, e.of_steps) == (350, 400)
    assert (e.site, e.function, e.called_at) == ("train.py:11", "evaluate", "train.py:23")


def test_none_where_train_comes_back_or_the_module_is_not_trained_or_has_no_such_layers() -> None:
    assert eval_mode_training(_events(train_each_epoch=True)) is None
    assert eval_mode_training(_events(trained=0)) is None  # an EMA copy kept in eval mode
    assert eval_mode_training(_events(moded=0)) is None  # no dropout, no batch norm: no difference
    assert eval_mode_training(ChildEvents()) is None


def test_the_probe_reads_mode_dependent_layers_and_whether_an_optimizer_updates_the_module() -> None:
    class Hooks:
        optimizers: list[torch.optim.Optimizer] = []

    kinds = _ModuleKinds(nn)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.1), nn.Linear(8, 2))
    ema = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1))
    plain = nn.Linear(4, 2)
    hooks = Hooks()
    assert kinds.of(model, hooks) == (1, 0)  # no optimizer yet
    hooks.optimizers = [torch.optim.SGD(model.parameters(), lr=0.1)]
    assert kinds.of(model, hooks) == (1, 1)  # read again: one more optimizer
    assert kinds.of(ema, hooks) == (1, 0) and kinds.of(plain, hooks) == (0, 0)
    assert kinds.of(model, None) == (1, None)
    # Fine-tuning's idioms: a batch norm layer put in eval mode itself (frozen statistics), a
    # backbone whose parameters are frozen though the optimizer was handed them.
    assert kinds.of(model[1], hooks)[0] == 0
    backbone = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
    for q in backbone.parameters():
        q.requires_grad_(False)
    hooks.optimizers = [torch.optim.SGD([*backbone.parameters(), *model.parameters()], lr=0.1)]
    assert kinds.of(backbone, hooks) == (1, 0)


def test_an_eval_whose_next_forward_records_autograd_is_a_part_trained_in_eval_mode_on_purpose() -> None:
    from gpubottle.wire import EvalForward

    ev = _events()
    for m in ev.modes:
        if not m.training:
            ev.eval_forwards.append(EvalForward(m.t + 0.001, 1, "train.py:20", "<module>"))
    assert eval_mode_training(ev) is None
    for i, f in enumerate(ev.eval_forwards):
        ev.eval_forwards[i] = f._replace(grad=0)  # the evaluation's forward, under no_grad
    e = eval_mode_training(ev)
    assert e is not None and e.steps == 350
