"""optimizer-rebuilt: the loop builds its optimizer anew at every step. Building one is cheap (16 us
for a 2-layer MLP's Adam here), but each new optimizer starts with empty state, so a stateful one
never trains as set up: Adam's first step from zero moments moves each weight by about lr in the
sign of its gradient, every step. Said as the loop's defect it is, whatever the run's verdict.

Built anew at every epoch instead (an old way to decay the learning rate: `opt = SGD(...,
lr=lr_for(epoch), momentum=0.9)` in the epoch loop), over the same parameters each time (the probe
checks the previous build's first parameter is the same live object, which a k-fold loop's new
model is not): its state starts over each epoch, said likewise."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, OptimizerRebuilt
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader

_ADAM = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam")
_AVERAGES = ("RMSprop", "Adagrad", "Adadelta", "ASGD", "Rprop")


def _state(cls: str | None, when: str = "step") -> str:
    name = (cls or "").rsplit(".", 1)[-1]
    if name in _ADAM and when == "step":
        return (f"{name}'s moment estimates start from zero at every step, so each update is a first "
                "step's (about lr in the sign of each gradient), with no momentum")
    if name in _ADAM:
        return (f"{name}'s moment estimates start from zero at every {when}, so its first steps are "
                "first steps again (about lr in the sign of each gradient)")
    if name == "SGD":
        return (f"SGD's momentum buffers (where momentum is set) start over at every {when}"
                + (": no momentum" if when == "step" else ""))
    if name in _AVERAGES:
        return f"{name}'s running averages start over at every {when}"
    return f"its state, if it keeps any, starts over at every {when}"


def _said(r: OptimizerRebuilt) -> bool:
    return r.builds >= th.OPTIMIZER_REBUILT_MIN and r.builds * th.OPTIMIZER_REBUILT_PER_STEPS >= r.steps


def _finding(r: OptimizerRebuilt) -> Finding:
    name = (r.cls or "optimizer").rsplit(".", 1)[-1]
    return Finding(
        v.OPTIMIZER_REBUILT, "warning", None,
        f"the loop builds a new {name} at every step ({r.site or 'line unknown'}): {_state(r.cls)}",
        [Fact(f"{r.builds} optimizers built at {r.site or 'one line'} for {r.steps} steps",
              "optimizer_builds", float(r.builds))],
        [Fix(text="build the optimizer once, before the loop (and a learning-rate scheduler on it "
                  "once too): the training then runs as configured; a change of results, not of "
                  "speed, so compare the loss curves", where=r.site)])


def _each_epoch(ev: Evidence, r: OptimizerRebuilt) -> bool:
    """Built once an epoch of the training loader, over the same parameters each time."""
    lo = main_loader(ev)
    epochs = lo.iterators if lo is not None else 0
    return (r.builds >= th.OPTIMIZER_EPOCH_REBUILT_MIN and r.same_params >= r.builds - 1
            and epochs >= th.OPTIMIZER_EPOCH_REBUILT_MIN and abs(r.builds - epochs) <= 1)


def _epoch_finding(r: OptimizerRebuilt) -> Finding:
    name = (r.cls or "optimizer").rsplit(".", 1)[-1]
    return Finding(
        v.OPTIMIZER_REBUILT, "warning", None,
        f"the loop builds a new {name} at every epoch ({r.site or 'line unknown'}), over the same "
        f"parameters: {_state(r.cls, 'epoch')}",
        [Fact(f"{r.builds} optimizers built at {r.site or 'one line'}, one an epoch, each over the "
              "parameters the one before updated", "optimizer_builds", float(r.builds))],
        [Fix(text="build the optimizer once, before the epochs; to change the learning rate each "
                  "epoch, set it on that one (for g in opt.param_groups: g['lr'] = new_lr) or use a "
                  "scheduler (torch.optim.lr_scheduler): its state then carries across epochs; a "
                  "change of results, not of speed, so compare the loss curves", where=r.site)])


def optimizer_rebuilt(ev: Evidence) -> list[Finding]:
    r = ev.optimizer_rebuilt
    if r is None:
        return []
    if _said(r):
        return [_finding(r)]
    return [_epoch_finding(r)] if _each_epoch(ev, r) else []
