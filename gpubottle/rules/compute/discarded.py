"""discarded-gradients: backward passes whose gradients a zero_grad() cleared before any optimizer
step used them (analysis/zero_grads.py). The usual cause: gradient accumulation over micro-batches
(a step every N backward passes) with zero_grad() called before every backward instead of once a
step: the step trains on the last micro-batch alone and the other backward passes are wasted.
Measured on this VM (4 micro-batches of 32, an MLP): 9 of 12 backward passes in the window
cleared, and the report read compute-bound and nothing else. The fix is a line and promises no
time: the run does the same work, and its steps then train on what the script meant them to."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import pct


def discarded_gradients(ev: Evidence) -> list[Finding]:
    g = ev.grads_discarded
    if g is None or g.backwards == 0 or g.discarded < th.DISCARDED_MIN_SHARE * g.backwards:
        return []
    per_step = g.backwards / max(1, g.steps)
    where = g.site or "a line not known"
    summary = (f"zero_grad() at {where} clears gradients before the optimizer step uses them: "
               f"{g.discarded} of {g.backwards} backward passes ({pct(g.discarded / g.backwards)}) over "
               f"{g.steps} steps were cleared, so each step trains on what the last backward before "
               "it computed and the others' work is thrown away")
    facts = [Fact(f"over {g.steps} optimizer steps: {g.backwards} backward passes ({per_step:.1f} a "
                  f"step), {g.discarded} of them cleared by a zero_grad() before a step",
                  "discarded_backwards", g.discarded)]
    fix = Fix(text=("zero the gradients once a step, after optimizer.step() (inside the block that "
                    "steps every N micro-batches), not before every backward: the micro-batches' "
                    "gradients then add up, as accumulation means, and every backward pass counts "
                    "(each micro-batch's loss divided by N keeps the step's size that of one batch)"),
              where=g.site)
    return [Finding(v.DISCARDED_GRADIENTS, "warning", None, summary, facts, [fix])]
