"""eval-mode-training: training steps taken while the model stays in eval mode after an evaluation
(analysis/eval_mode.py). Dropout is off and batch norm normalises by running statistics it no longer
updates: the model does not train as the script sets it up, whatever the speed says. Measured on
this VM, an MLP with BatchNorm1d and Dropout whose evaluate() never calls train(): 7 of its 8
epochs trained in eval mode, and the report read compute-bound and nothing else. The fix is a line
and promises no number (the training's loss is the script's to judge)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import pct


def eval_mode_training(ev: Evidence) -> list[Finding]:
    e = ev.eval_mode
    if e is None or e.of_steps == 0 or e.steps < th.EVAL_MODE_MIN_STEPS or \
            e.steps < th.EVAL_MODE_MIN_SHARE * e.of_steps:
        return []
    named = f"{e.function}()" if e.function and e.function != "<module>" else None
    where = e.site or "the script"
    by = f"model.eval() at {where}" + (f" (in {named}, called at {e.called_at})"
                                        if named and e.called_at else f" (in {named})" if named else "")
    summary = (f"{by} leaves the model in eval mode with no model.train() after it: {e.steps} of the "
               f"{e.of_steps} training steps ({pct(e.steps / e.of_steps)}) ran with dropout off and "
               "batch norm normalising by running statistics it no longer updates: the model does "
               "not train as the script sets it up")
    facts = [Fact(f"{e.steps} optimizer steps came after an eval() of a module that holds dropout or "
                  "batch norm and whose parameters the optimizer updates, before any train()",
                  "eval_mode_steps", e.steps)]
    after = f"after {named}" if named else "after the evaluation"
    fix = Fix(text=(f"call model.train() again {after}: at the top of each epoch's training loop, "
                    f"before its first batch, or at the end of {named or 'the evaluation'}; the "
                    "steps then train with dropout and batch norm as set up (check the loss: "
                    "training in eval mode may have hidden a learning-rate or regularisation "
                    "problem)"),
              where=e.called_at or e.site)
    return [Finding(v.EVAL_MODE_TRAINING, "warning", None, summary, facts, [fix])]
