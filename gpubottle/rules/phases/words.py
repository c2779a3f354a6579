"""checkpoint-bound and startup-bound, an evaluation loader's input finding said for the evaluation
and the run, and the run's wall time a step fix promises."""

from __future__ import annotations

import dataclasses

from gpubottle.evidence import Recompiled
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules.phases.decide import Checkpoints, EvalContext, ModelEval, StartUp
from gpubottle.units import gib, ms, pct, seconds


def run_change(total: float, new_total: float) -> str:
    return f"run {seconds(total)} -> about {seconds(new_total)} ({total / max(new_total, 1e-9):.1f}x)"


def _size(d: Checkpoints) -> str:
    return f" of {gib(d.bytes)}" if d.bytes else ""


def checkpoint_facts(d: Checkpoints) -> list[Fact]:
    per = d.per_save_s
    facts = [Fact(f"{d.count} saves{_size(d)} with {d.what}, {ms(per)} each: {seconds(d.seconds)} of the "
                  f"run's {seconds(d.total_s)}", "checkpoint_share", round(d.share, 4))]
    if d.bytes and per > 0:
        facts.append(Fact(f"writing at {d.bytes / per / (1 << 20):.0f} MiB/s while the training loop "
                          "waits for it"))
    if d.bytes and d.state_bytes is not None:
        facts.append(Fact(f"of each save, {gib(d.state_bytes)} is the model's weights and the "
                          "optimizer's state (what resuming needs)"))
    if d.every:
        facts.append(Fact(f"a save every {d.every:g} training steps, on the loop's own thread"))
    facts += [Fact(f"also saved at {site}: {seconds(s)}") for site, s in d.others]
    return facts


def checkpoint_fixes(d: Checkpoints) -> list[Fix]:
    fixes = []
    s = d.save_less
    if s is not None:
        fixes.append(Fix(
            text=f"save every {s.new_every} training steps instead of every {s.every:g}: the saves would "
            f"cost about {seconds(s.kept_s)} instead of {seconds(d.seconds)} (a checkpoint is for "
            "resuming: what a crash would lose is at most that many steps)",
            where=d.where, change={"save every (steps)": [s.every, s.new_every]},
            expected=f"checkpoints {seconds(d.seconds)} -> about {seconds(s.kept_s)}; "
            + run_change(d.total_s, s.run_s), expected_run_s=round(s.run_s, 3)))
    fixes.append(Fix(
        text="try saving in the background: copy the state to CPU memory (the loop waits only for "
        "the copy) and write it from another thread, e.g. torch.distributed.checkpoint.async_save, "
        "or torch.save of the copy in a threading.Thread (it holds a second copy in memory meanwhile)",
        where=d.where))
    if d.big_state:
        held = (f"each save holds {gib(d.bytes - d.state_bytes)} beyond the model's weights and the "
                f"optimizer's state ({gib(d.state_bytes)}): "
                if d.bytes and d.state_bytes is not None else "")
        fixes.append(Fix(text=held + "save only what resuming needs (the model, the optimizer's state, "
                         "the step and the RNG states): for keeping the best model, save its "
                         "state_dict alone, and keep fewer files", where=d.where))
    return fixes


def checkpoint_summary(d: Checkpoints) -> str:
    return (f"saving checkpoints stops the training loop {pct(d.share)} of the run: {d.count} saves"
            f"{_size(d)}, {ms(d.per_save_s)} each" + (f", every {d.every:g} steps" if d.every else ""))


def _startup_what(d: StartUp) -> str:
    if d.is_import:
        return d.top
    return f"{d.top} ({d.site})" if d.site else d.top


def startup_facts(d: StartUp) -> list[Fact]:
    return [Fact(f"start-up takes {seconds(d.seconds)} of the run's {seconds(d.total_s)} before the "
                 "first batch: " + ", ".join(f"{k} {seconds(s)}" for k, s in
                                              sorted(d.parts.items(), key=lambda kv: -kv[1])),
                 "startup_share", round(d.seconds / d.total_s, 4))]


def _spawn_fixes(d: StartUp) -> list[Fix]:
    """Workers started with spawn: each gets the dataset pickled into it before the first batch.
    Fork shares the parent's memory instead; a file each worker opens itself sends only its path."""
    lo = d.loader
    n = lo.num_workers if lo is not None and lo.num_workers else None
    each = f" ({seconds(d.top_s / n)} a worker)" if n else ""
    held = (f"; each worker then holds about {gib(d.worker_bytes)} of its own, its copy"
            if d.worker_bytes else "")
    run_s = round(d.total_s - d.top_s, 3)
    where = lo.site if lo is not None and lo.site else d.site
    return [
        Fix(text=f"starting {n or 'the'} worker processes with {lo.start_method if lo else 'spawn'} took "
            f"{seconds(d.top_s)} before the first batch{each}: the dataset is pickled into every "
            f"worker{held}. Start them with fork where the platform has it (Linux): "
            "DataLoader(..., multiprocessing_context='fork'), which shares the parent's memory and "
            "pickles nothing", where=where,
            change={"multiprocessing_context": [lo.start_method if lo else "spawn", "fork"]},
            expected=f"start-up {seconds(d.seconds)} -> about {seconds(d.seconds - d.top_s)}; "
            + run_change(d.total_s, run_s), expected_run_s=run_s),
        Fix(text="or keep the data in a file each worker opens itself (a path in the dataset, "
            "numpy.load(path, mmap_mode='r') on first use in __getitem__): only the path is pickled, "
            "and the workers share the page cache; or use fewer workers, each of which costs its "
            "share of that start (persistent_workers=True starts them once for every epoch)",
            where=where),
    ]


def startup_fixes(d: StartUp) -> list[Fix]:
    if d.is_spawning:
        return _spawn_fixes(d)
    if d.is_import:
        return [Fix(text=f"{d.top} takes {seconds(d.top_s)}: import it where it is used, inside the "
                         "function that needs it, if most runs do not")]
    if d.is_compiling:
        return [_compile_fix(d)]
    if d.is_prepass:
        return [Fix(
            text=f"{_startup_what(d)} takes {seconds(d.top_s)} before the first batch, loading every "
            "sample it draws once more than the training does. Where what it gathers is held apart by "
            "the dataset (the labels for class weights: np.bincount(dataset.labels), not through the "
            "loader), read it there without loading the samples; else compute it once, torch.save "
            "the result and load it on later runs; start-up could shrink by up to "
            f"{seconds(d.top_s)}", where=d.site)]
    return [Fix(
        text=f"{_startup_what(d)} takes {seconds(d.top_s)} before the first batch: try computing it once "
        "and caching the result (torch.save the tensors it builds, torch.load them on later runs; "
        "numpy.load(mmap_mode='r') for large arrays), or doing the work per sample in "
        "__getitem__, where DataLoader workers share it; start-up could shrink by up to "
        f"{seconds(d.top_s)}", where=d.site)]


def _compile_fix(d: StartUp) -> Fix:
    """torch.compile's start-up is not the script's to cache: it pays off over a long run, costs a
    short one (a 30-step script here: 28 s with inductor's cache cold, 9.6 s warm, 6.4 s without
    compiling), and inductor caches it on disk for the next run of the same code."""
    at = f" at {d.compiled_at}" if d.compiled_at else ""
    after = (f", against {seconds(d.train_s)} for the {d.train_steps} training steps after it"
             if d.train_s is not None and d.train_steps else "")
    return Fix(
        text=f"compiling (torch.compile{at}) takes {seconds(d.top_s)} before the first batch{after}: "
        "it pays off only over a long enough run. For short runs (debugging, CI) run without it: "
        "TORCH_COMPILE_DISABLE=1 in the environment turns it off with no change to the code; later "
        "runs of the same code reuse inductor's on-disk cache and compile faster; try it and time it"
        + _recompiled_text(d.recompiled),
        where=d.compiled_at or d.site)


def _recompiled_text(recompiled: list[Recompiled]) -> str:
    """What dynamo compiled again, and why, where it did: each recompile is a compile again."""
    if not recompiled:
        return ""
    top = recompiled[0]
    times = "once" if top.times == 1 else f"{top.times} times"
    shapes = "size mismatch" in top.reason or "shape" in top.reason
    return (f". It compiled {top.function}" + (f" ({top.site})" if top.site else "") + f" again {times}, "
            f"as a guard failed (\"{top.reason[:120]}\")"
            + (": inputs of new shapes. Pad them to one length (or a few buckets of lengths): a "
               "small encoder fed 7 sequence lengths on a test machine took 42 s cold, 29 s padded to "
               "one, 39.8 s with dynamic=True (one compile, but a slower one)" if shapes else ""))


def startup_summary(d: StartUp) -> str:
    # (the own work's share is the finding's share of the run, shown beside the verdict)
    return (f"start-up takes {pct(d.seconds / d.total_s)} of the run, {seconds(d.own_s)} of it "
            f"({pct(d.own_share)} of the run) the script's own work before its first batch: most in "
            f"{_startup_what(d)}")


def _eval_fix(fix: Fix, c: EvalContext) -> Fix:
    """A fix of the evaluation loader, said for its passes and the run."""
    out = dataclasses.replace(fix, change=dict(fix.change))
    if "num_workers" in fix.change and c.restarts_workers:
        # Started for every pass, the workers would cost their start each time: keep them.
        out.change["persistent_workers"] = [False, True]
        out.text += (f", with persistent_workers=True so they start once, not for each of the "
                     f"{c.phase.passes} passes")
    if fix.expected_step_s is not None:
        new_eval, run_s = c.run_s(fix.expected_step_s)
        # An evaluation batch's step, not the training step's: the run says it.
        out.expected_step_s, out.expected_run_s = None, round(run_s, 3)
        out.expected = (f"evaluation {seconds(c.phase.seconds)} -> about {seconds(new_eval)}; "
                        + run_change(c.total_s, out.expected_run_s))
    return out


TRAINING_SET_AGAIN = ("these passes read the training set again, under no_grad, to measure it: "
                      "count the training batches' own predictions as they train (a running "
                      "accuracy or loss over the epoch) and drop the pass, or measure on a fixed "
                      "subset and on the whole set at the end; try it")


def eval_finding(f: Finding, c: EvalContext, severity: str, training_loader: bool = False) -> Finding:
    """An input finding about evaluation passes (from the input rules on their own evidence), said
    for the evaluation and for the run: a new finding, the input rules' own left as they were.
    `training_loader`: the passes iterate the training's own DataLoader (its accuracy each epoch)."""
    ph = c.phase
    lo = c.loader
    where = f"the DataLoader at {lo.site}" if lo.site else "its DataLoader"
    if training_loader:
        where = f"the training's own DataLoader at {lo.site}" if lo.site else "the training's DataLoader"
    every = f", every {ph.every_steps:g} training steps" if ph.every_steps else ""
    facts = [Fact(f"evaluation: {ph.passes} passes, {seconds(ph.seconds)} of the run's "
                  f"{seconds(c.total_s)}; {seconds(c.waited_s)} of it waiting for batches", "eval_share",
                  round(c.share, 4)), *f.evidence]
    fixes = [_eval_fix(x, c) for x in f.fixes]
    if training_loader:
        fixes.insert(0, Fix(text=TRAINING_SET_AGAIN, where=lo.iter_site or lo.site))
    if ph.every_steps:
        fixes.append(Fix(text=f"evaluate less often: each pass costs {seconds(c.per_pass_s)}; every "
                         f"{2 * ph.every_steps:g} training steps instead of every {ph.every_steps:g} "
                         f"halves the {seconds(ph.seconds)} (or evaluate on a fixed subset, and on the "
                         "whole set at the end)", where=lo.site))
    return dataclasses.replace(
        f, severity=severity, summary=(f"evaluation takes {pct(c.share)} of the run ({ph.passes} passes "
                                       f"of {where}{every}), and there {f.summary}"),
        evidence=facts, fixes=fixes, phase="eval", run_share=round(c.run_share, 4))


def on_the_run_fix(fix: Fix, total: float, step_s: float, steps: int) -> Fix:
    """A fix that promises a training step time, with the run's wall time it promises too (start-up,
    evaluation and the rest as they are)."""
    if fix.expected_step_s is None or fix.expected_run_s is not None:
        return fix
    run_s = round(total - (step_s - fix.expected_step_s) * steps, 3)
    expected = fix.expected + "; " + run_change(total, run_s) if fix.expected else fix.expected
    return dataclasses.replace(fix, expected_run_s=run_s, expected=expected)


def _evaluation(d: ModelEval) -> str:
    """The evaluation by its function, or, written inline in the loop, by its model.eval() line."""
    if d.function in ("<loop>", "<module>", "?"):
        return f"the evaluation in the loop ({d.where})" if d.where else "the evaluation in the loop"
    return f"{d.function}()"


def _one_at_a_time(d: ModelEval) -> str:
    rows = (d.rows or 0) / max(1, d.calls or 1)
    return (f"the model called {'over ' if d.capped else ''}{d.calls:,} times a pass, "
            + ("one row a call" if rows <= 1.0 else f"{rows:.1f} rows a call"))


def model_eval_summary(d: ModelEval) -> str:
    every = f", every {d.every:g} training steps" if d.every else ""
    calls = f", {_one_at_a_time(d)}" if d.calls else ""
    return (f"evaluation takes {pct(d.share)} of the run: {d.count} passes of {_evaluation(d)} "
            f"(no DataLoader), {seconds(d.per_pass_s)} each{every}{calls}")


def model_eval_facts(d: ModelEval) -> list[Fact]:
    return [Fact(f"{d.count} passes of {d.what or d.function}: {seconds(d.seconds)} of the run's "
                 f"{seconds(d.total_s)}", "eval_share", round(d.share, 4)),
            Fact("recognised as evaluation: the model switched to eval() and back to train() between "
                 "training steps, with no backward or optimizer step in between")]


def model_eval_fixes(d: ModelEval) -> list[Fix]:
    fixes = []
    if d.calls:
        # A Python loop over the evaluation's samples: the calls, not the rows, are the cost.
        fixes.append(Fix(
            text=f"{_evaluation(d)} calls the model one sample at a time ({_one_at_a_time(d)}, "
            f"{seconds(d.per_pass_s)} a pass): call it on batches of rows instead, under "
            "torch.no_grad() (rows sliced 256 at a time, model(x[i:i + 256]), or the whole set in "
            f"one call where it fits): a few calls a pass instead of {'over ' if d.capped else ''}"
            f"{d.calls:,} (3,000 rows of a "
            "small MLP on a test machine: 67 ms a pass one row a call, 0.7 ms 256 a call); try it "
            "and time it", where=d.site or d.where))
    if d.new_every and d.every and d.kept_s is not None and d.run_s is not None:
        fixes.append(Fix(
            text=f"evaluate every {d.new_every} training steps instead of every {d.every:g}: "
            f"{_evaluation(d)} would take about {seconds(d.kept_s)} instead of {seconds(d.seconds)} "
            "(its passes cost the same each time)", where=d.where,
            change={"evaluate every (steps)": [d.every, d.new_every]},
            expected=f"evaluation {seconds(d.seconds)} -> about {seconds(d.kept_s)}; "
            + run_change(d.total_s, d.run_s), expected_run_s=round(d.run_s, 3)))
    # A pass over a fixed set's rows draws no batches (no eval_iters to lower): its rows are the
    # measure, a fixed subset of them.
    fewer = ("evaluate on fewer rows: each pass of {e} costs {t}, in proportion to the rows it "
             "scores; a fixed subset half as large halves it, for a noisier estimate (the whole set "
             "at the end): try it" if d.calls else
             "evaluate on fewer batches: each pass of {e} costs {t}, in proportion to the batches it "
             "draws (nanoGPT's eval_iters); half as many halve it, for a noisier estimate: try it")
    fixes.append(Fix(text=fewer.format(e=_evaluation(d), t=seconds(d.per_pass_s)), where=d.where))
    return fixes
