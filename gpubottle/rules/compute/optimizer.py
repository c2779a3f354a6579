"""optimizer-rebuilt: the loop builds its optimizer anew at every step. Building one is cheap (16 us
for a 2-layer MLP's Adam here), but each new optimizer starts with empty state, so a stateful one
never trains as set up: Adam's first step from zero moments moves each weight by about lr in the
sign of its gradient, every step. Said as the loop's defect it is, whatever the run's verdict."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, OptimizerRebuilt
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th

_ADAM = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam")
_AVERAGES = ("RMSprop", "Adagrad", "Adadelta", "ASGD", "Rprop")


def _state(cls: str | None) -> str:
    name = (cls or "").rsplit(".", 1)[-1]
    if name in _ADAM:
        return (f"{name}'s moment estimates start from zero at every step, so each update is a first "
                "step's (about lr in the sign of each gradient), with no momentum")
    if name == "SGD":
        return "SGD's momentum buffers (where momentum is set) start over at every step: no momentum"
    if name in _AVERAGES:
        return f"{name}'s running averages start over at every step"
    return "its state, if it keeps any, starts over at every step"


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


def optimizer_rebuilt(ev: Evidence) -> list[Finding]:
    r = ev.optimizer_rebuilt
    return [_finding(r)] if r is not None and _said(r) else []
