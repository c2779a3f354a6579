"""The run outside its training step: evaluation, checkpoints, start-up, from the run's account.

An evaluation loader is diagnosed by the input rules themselves, on its passes' own evidence (its
batches are its steps): a starving one is `data-starved` with its own DataLoader's fixes, said in
terms of the evaluation and of the run. Checkpoints and the script's own start-up get findings of
their own kinds. Every finding here says its phase and its share of the run's wall time.
"""

from __future__ import annotations

import dataclasses

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import CHECKPOINT, EVAL, STARTUP, TRAIN
from gpubottle.report import Finding
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import entry, main_loader
from gpubottle.rules.input import input_pipeline
from gpubottle.rules.phases import words
from gpubottle.rules.phases.decide import (
    decide_checkpoints,
    decide_model_evals,
    decide_startup,
    eval_contexts,
    wall,
)


def eval_findings(ev: Evidence) -> list[Finding]:
    out: list[Finding] = []
    for c in eval_contexts(ev):
        ph = c.phase
        sub = dataclasses.replace(ev, steps=ph.steps, loaders=[c.loader], cpu=ph.cpu, stacks=ph.stacks,
                                  gpu=None, nvml=[], cuda_memory=None, memory=None, trials=None,
                                  ranks=[], phases=[], account=[], sync_sites=[])
        severity = th.severity_for_run_share(round(c.run_share, 4))
        train = main_loader(ev)
        # (a pass over the training's own DataLoader under no_grad: the training set measured again)
        again = train is not None and train.id == c.loader.id and bool(train.batches)
        out += [words.eval_finding(f, c, severity, again) for f in input_pipeline(sub)]
    return out


def model_eval_findings(ev: Evidence) -> list[Finding]:
    """Evaluation the script runs without a DataLoader (model.eval() ... model.train())."""
    return [Finding(v.EVAL_BOUND, th.severity_for_run_share(d.share), None, words.model_eval_summary(d),
                    words.model_eval_facts(d), words.model_eval_fixes(d), phase=EVAL,
                    run_share=round(d.share, 4)) for d in decide_model_evals(ev)]


def checkpoint_findings(ev: Evidence) -> list[Finding]:
    d = decide_checkpoints(ev)
    if d is None:
        return []
    return [Finding(v.CHECKPOINT_BOUND, th.severity_for_run_share(d.share), None,
                    words.checkpoint_summary(d), words.checkpoint_facts(d), words.checkpoint_fixes(d),
                    phase=CHECKPOINT, run_share=round(d.share, 4))]


def startup_findings(ev: Evidence) -> list[Finding]:
    d = decide_startup(ev)
    if d is None:
        return []
    return [Finding(v.STARTUP_BOUND, th.severity_for_run_share(d.own_share), None,
                    words.startup_summary(d), words.startup_facts(d), words.startup_fixes(d),
                    phase=STARTUP, run_share=round(d.own_share, 4))]


def on_the_run(ev: Evidence, findings: list[Finding]) -> list[Finding]:
    """Findings about the training steps, said for the run too: the share of the run they cost,
    and for fixes that promise a step time, the run's wall time they promise (start-up,
    evaluation and the rest stay as they are)."""
    total = wall(ev)
    train = entry(ev, TRAIN)
    m = ev.measured()
    if total is None or train is None or m is None:
        return findings
    after_warmup = max(0, len(ev.steps.durations_s) - ev.steps.warmup)
    out = []
    for f in findings:
        if f.phase == TRAIN:
            run_share = (round(f.share * train.seconds / total, 4)
                         if f.run_share is None and f.share is not None else f.run_share)
            f = dataclasses.replace(f, run_share=run_share, fixes=[
                words.on_the_run_fix(x, total, m.mean_step_s, after_warmup) for x in f.fixes])
        out.append(f)
    return out
