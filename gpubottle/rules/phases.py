"""The run outside its training step: evaluation, checkpoints, start-up, from the run's account.

An evaluation loader is diagnosed by the input rules themselves, on its passes' own evidence (its
batches are its steps): a starving one is `data-starved` with its own DataLoader's fixes, said in
terms of the evaluation and of the run. Checkpoints and the script's own start-up get findings of
their own kinds. Every finding here says its phase and its share of the run's wall time.
"""

from __future__ import annotations

import dataclasses
import math

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, PhaseEvidence
from gpubottle.evidence.account import CHECKPOINT, STARTUP, TRAIN, AccountEntry
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.input_pipeline import input_pipeline
from gpubottle.units import gib, ms, pct, seconds


# Parts of start-up no change to the script removes: Python, torch (and the modules torch imports
# on first use), gpubottle's own; and what no stack sample named ("other": nothing to advise on).
def _fixed(part: str) -> bool:
    return (part in ("Python and gpubottle starting", "gpubottle installing its probes", "other")
            or part == "import torch" or part.startswith(("import torch.", "first batch")))


def wall(ev: Evidence) -> float | None:
    total = sum(a.seconds for a in ev.account)
    return total if total > 0 else None


def entry(ev: Evidence, phase: str) -> AccountEntry | None:
    return next((a for a in ev.account if a.phase == phase), None)


def _run_change(total: float, new_total: float) -> str:
    return f"run {seconds(total)} -> about {seconds(new_total)} ({total / max(new_total, 1e-9):.1f}x)"


def eval_findings(ev: Evidence) -> list[Finding]:
    total = wall(ev)
    out: list[Finding] = []
    for ph in ev.phases:
        if total is None or ph.seconds / total < th.PHASE_MIN_SHARE or ph.loader is None:
            continue
        sub = dataclasses.replace(ev, steps=ph.steps, loaders=[ph.loader], cpu=ph.cpu, stacks=ph.stacks,
                                  gpu=None, nvml=[], cuda_memory=None, memory=None, trials=None,
                                  ranks=[], phases=[], account=[], sync_sites=[])
        for f in input_pipeline(sub):
            out.append(_as_eval(f, ph, total))
    return out


def _as_eval(f: Finding, ph: PhaseEvidence, total: float) -> Finding:
    """An input finding about evaluation passes, said for the evaluation and the run."""
    waited = sum(ph.steps.input_wait_s)
    f.phase = "eval"
    f.run_share = round(waited / total, 4)
    f.severity = th.severity_for_run_share(f.run_share)
    lo = ph.loader
    where = f"the DataLoader at {lo.site}" if lo is not None and lo.site else "its DataLoader"
    every = f", every {ph.every_steps:g} training steps" if ph.every_steps else ""
    f.summary = (f"evaluation takes {pct(ph.seconds / total)} of the run ({ph.passes} passes of {where}"
                 f"{every}), and there {f.summary}")
    f.evidence.insert(0, Fact(
        f"evaluation: {ph.passes} passes, {seconds(ph.seconds)} of the run's {seconds(total)}; "
        f"{seconds(waited)} of it waiting for batches", "eval_share", round(ph.seconds / total, 4)))
    n = len(ph.steps.durations_s)
    for fix in f.fixes:
        if (lo is not None and "num_workers" in fix.change and not lo.persistent_workers
                and ph.passes > 1):
            # Started for every pass, the workers would cost their start each time: keep them.
            fix.change["persistent_workers"] = [False, True]
            fix.text += (f", with persistent_workers=True so they start once, not for each of the "
                         f"{ph.passes} passes")
        if fix.expected_step_s is None:
            continue
        new_eval = n * fix.expected_step_s
        fix.expected_run_s = round(total - ph.seconds + new_eval, 3)
        fix.expected_step_s = None  # an evaluation batch's, not the training step's: the run says it
        fix.expected = (f"evaluation {seconds(ph.seconds)} -> about {seconds(new_eval)}; "
                        + _run_change(total, fix.expected_run_s))
    per_pass = ph.seconds / max(1, ph.passes)
    if ph.every_steps:
        fewer = Fix(text=f"evaluate less often: each pass costs {seconds(per_pass)}; every "
                    f"{2 * ph.every_steps:g} training steps instead of every {ph.every_steps:g} "
                    f"halves the {seconds(ph.seconds)} (or evaluate on a fixed subset, and on the "
                    "whole set at the end)", where=lo.site if lo is not None else None)
        f.fixes.append(fewer)
    return f


def checkpoint_findings(ev: Evidence) -> list[Finding]:
    total = wall(ev)
    e = entry(ev, CHECKPOINT)
    if total is None or e is None or not e.count:
        return []
    share = e.seconds / total
    if share < th.CHECKPOINT_MIN_SHARE or e.seconds < th.CHECKPOINT_FLOOR_S:
        return []
    per = e.seconds / e.count
    size = f" of {gib(e.bytes)}" if e.bytes else ""
    every = (int(e.every_steps) if e.every_steps and float(e.every_steps).is_integer()
             else e.every_steps)
    facts = [Fact(f"{e.count} saves{size} with {e.what}, {ms(per)} each: {seconds(e.seconds)} of the "
                  f"run's {seconds(total)}", "checkpoint_share", round(share, 4))]
    if e.bytes and per > 0:
        facts.append(Fact(f"writing at {e.bytes / per / (1 << 20):.0f} MiB/s while the training loop "
                          "waits for it"))
    if every:
        facts.append(Fact(f"a save every {every:g} training steps, on the loop's own thread"))
    for site, s in sorted(e.parts.items(), key=lambda kv: -kv[1])[1:3]:
        facts.append(Fact(f"also saved at {site}: {seconds(s)}"))
    fixes = []
    if every:
        target = th.CHECKPOINT_TARGET_SHARE * (total - e.seconds)
        factor = max(2, math.ceil(e.seconds / max(target, 1e-9)))
        new_every = _nice(every * factor)
        kept = e.seconds * every / new_every
        run_new = total - e.seconds + kept
        fixes.append(Fix(
            text=f"save every {new_every} training steps instead of every {every:g}: the saves would "
            f"cost about {seconds(kept)} instead of {seconds(e.seconds)} (a checkpoint is for resuming: "
            "what a crash would lose is at most that many steps)",
            where=e.where, change={"save every (steps)": [every, new_every]},
            expected=f"checkpoints {seconds(e.seconds)} -> about {seconds(kept)}; "
            + _run_change(total, run_new), expected_run_s=round(run_new, 3)))
    fixes.append(Fix(
        text="try saving in the background: copy the state to CPU memory (the loop waits only for "
        "the copy) and write it from another thread, e.g. torch.distributed.checkpoint.async_save, "
        "or torch.save of the copy in a threading.Thread (it holds a second copy in memory meanwhile)",
        where=e.where))
    if e.bytes and e.bytes >= 64 << 20:
        fixes.append(Fix(text="save only what resuming needs (the model, the optimizer's state, the step "
                              "and the RNG states): for keeping the best model, save its state_dict "
                              "alone, and keep fewer files", where=e.where))
    summary = (f"saving checkpoints stops the training loop {pct(share)} of the run: {e.count} saves"
               f"{size}, {ms(per)} each" + (f", every {every:g} steps" if every else ""))
    return [Finding(v.CHECKPOINT_BOUND, th.severity_for_run_share(share), None, summary, facts, fixes,
                    phase=CHECKPOINT, run_share=round(share, 4))]


def _nice(n: float) -> int:
    """A round interval at least n: 10, 20, 25, 50, 100, 200, 250, 500, 1000..."""
    step = 10 ** max(0, math.floor(math.log10(max(n, 1))))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= n and float(m * step).is_integer():
            return int(m * step)
    return int(10 * step)


def startup_findings(ev: Evidence) -> list[Finding]:
    total = wall(ev)
    e = entry(ev, STARTUP)
    if total is None or e is None:
        return []
    own = {k: s for k, s in e.parts.items() if not _fixed(k)}
    own_s = sum(own.values())
    if own_s / total < th.STARTUP_MIN_SHARE or own_s < th.STARTUP_FLOOR_S:
        return []
    name, top = max(own.items(), key=lambda kv: kv[1])
    site = e.part_sites.get(name)
    facts = [Fact(f"start-up takes {seconds(e.seconds)} of the run's {seconds(total)} before the "
                  "first batch: " + ", ".join(f"{k} {seconds(s)}" for k, s in
                                               sorted(e.parts.items(), key=lambda kv: -kv[1])),
                  "startup_share", round(e.seconds / total, 4))]
    fixes = []
    if name.startswith("import "):
        fixes.append(Fix(text=f"{name} takes {seconds(top)}: import it where it is used, inside the "
                              "function that needs it, if most runs do not"))
        what = name
    else:
        what = f"{name} ({site})" if site else name
        fixes.append(Fix(
            text=f"{what} takes {seconds(top)} before the first batch: try computing it once and "
            "caching the result (torch.save the tensors it builds, torch.load them on later runs; "
            "numpy.load(mmap_mode='r') for large arrays), or doing the work per sample in "
            "__getitem__, where DataLoader workers share it; start-up could shrink by up to "
            f"{seconds(top)}", where=site))
    summary = (f"start-up takes {pct(e.seconds / total)} of the run, {seconds(own_s)} of it the "
               f"script's own work before its first batch: most in {what}")
    return [Finding(v.STARTUP_BOUND, th.severity_for_run_share(own_s / total), None, summary, facts, fixes,
                    phase=STARTUP, run_share=round(own_s / total, 4))]


def on_the_run(ev: Evidence, findings: list[Finding]) -> None:
    """Findings about the training steps, said for the run too: the share of the run they cost,
    and for fixes that promise a step time, the run's wall time they promise (start-up,
    evaluation and the rest stay as they are)."""
    total = wall(ev)
    train = entry(ev, TRAIN)
    m = ev.measured()
    if total is None or train is None or m is None:
        return
    after_warmup = max(0, len(ev.steps.durations_s) - ev.steps.warmup)
    for f in findings:
        if f.phase != TRAIN:
            continue
        if f.run_share is None and f.share is not None:
            f.run_share = round(f.share * train.seconds / total, 4)
        for fix in f.fixes:
            if fix.expected_step_s is None or fix.expected_run_s is not None:
                continue
            fix.expected_run_s = round(total - (m.mean_step_s - fix.expected_step_s) * after_warmup, 3)
            if fix.expected:
                fix.expected += "; " + _run_change(total, fix.expected_run_s)
