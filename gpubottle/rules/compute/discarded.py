"""discarded-gradients: backward passes whose gradients a zero_grad() cleared before any optimizer
step used them (analysis/zero_grads.py). The usual cause: gradient accumulation over micro-batches
(a step every N backward passes) with zero_grad() called before every backward instead of once a
step: the step trains on the last micro-batch alone and the other backward passes are wasted.
Measured on this VM (4 micro-batches of 32, an MLP): 9 of 12 backward passes in the window
cleared, and the report read compute-bound and nothing else. The fix is a line and promises no
time: the run does the same work, and its steps then train on what the script meant them to."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, GradsDiscarded, GradsForAnother
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.compute.other_net import undetached
from gpubottle.units import pct


def discarded_gradients(ev: Evidence) -> list[Finding]:
    g = ev.grads_discarded
    if g is not None and g.kept and not g.discarded:
        return [_uncleared(g)]
    if g is None or g.backwards == 0 or g.discarded < th.DISCARDED_MIN_SHARE * g.backwards:
        a = ev.grads_for_another
        return [_for_another(a, ev.run.cwd)] if a is not None and a.upstream and a.cleared else []
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


def _uncleared(g: GradsDiscarded) -> Finding:
    """Nothing cleared the gradients between two optimizer steps (no zero_grad(), no p.grad = None):
    each backward adds to every earlier one. Measured on this VM, a 2-layer MLP under SGD without
    zero_grad() on random labels: its loss rose above chance over two epochs (2.46 -> 2.57), with
    zero_grad() it stays at chance (2.31 -> 2.30)."""
    at = g.backward_site or "a line not known"
    summary = (f"nothing clears the gradients between optimizer steps: the backward at {at} adds to "
               "the gradients of every step before it, so each step applies the sum of the run's "
               "gradients so far, not its batch's")
    facts = [Fact(f"the first backward after an optimizer step added to the gradient that step had "
                  f"used, nothing having cleared it ({g.backwards} backward passes and {g.steps} "
                  "steps watched)", "uncleared_gradients", 1)]
    fix = Fix(text=("call optimizer.zero_grad() once a step, before the backward (or right after "
                    "optimizer.step()): each step then applies its own batch's gradients. Where the "
                    "gradients are meant to add up over micro-batches, zero them after each "
                    "optimizer.step() all the same. The run does the same work: no time is promised"),
              where=g.backward_site)
    return Finding(v.UNCLEARED_GRADIENTS, "warning", None, summary, facts, [fix])


def _for_another(a: GradsForAnother, cwd: str | None) -> Finding:
    """One optimizer's network fed another's loss undetached (a GAN's generator output in the
    discriminator's loss): that loss's backward ran on through the first network, whose optimizer
    then cleared those gradients before its step. Measured on this VM, a DCGAN-shaped loop (G's
    transposed convolutions into D, batch 64): 300 steps 25.7 and 27.5 s, with fake.detach() in D's
    loss and no retain_graph 19.5 and 21.4 s, the same updates."""
    u = undetached(a, cwd)
    net = u.network or "its network"
    opt = u.optimizer or "its optimizer"
    at = a.backward_site or "a line not known"
    summary = (f"the backward at {at} runs on through {net}, computing gradients that "
               f"{opt}.zero_grad() at {a.zero_site or 'a line not known'} clears before {opt}'s step "
               f"uses them: {net}'s output reaches that loss undetached, and the whole pass through "
               f"{net} there is for nothing")
    facts = [Fact(f"over {a.steps} of {opt}'s steps: {a.cleared} of the {a.passes} backward passes that "
                  f"filled its gradients were cleared unused, each from the backward at {at}, where "
                  "another optimizer stepped", "cleared_for_another", a.cleared)]
    where = (f"`{u.output}.detach()` where the loss at {u.loss_site} reads {u.output} "
             if u.output and u.loss_site else
             f"{net}'s output detached (x.detach()) where that loss reads it ")
    retain = (f"; retain_graph=True at {at} kept that graph for the later backward: try without it"
              if u.retains else "")
    fix = Fix(text=(f"{where}(the other network's loss then stops at it{retain}): the same updates, "
                    f"{net}'s gradients from its own loss only, and the step loses a backward through "
                    f"{net}. Measured on a test machine, a DCGAN-shaped loop at batch 64: 300 steps "
                    "25.7-27.5 s, detached 19.5-21.4 s; try it and time it"),
              where=u.loss_site or a.backward_site)
    return Finding(v.DISCARDED_GRADIENTS, "warning", None, summary, facts, [fix])
