"""Timing each setting in bounded runs of the user's script (`gpubottle run --try-fixes`).

Each trial is `gpubottle run --steps N --duration S` of the same script and arguments, from the same
working directory, with the setting applied by the probes (GPUBOTTLE_TRIAL: probes/trial.py) and
without py-spy, NVML or the profiler window, so every setting pays the same small cost. Settings run
in rounds, in alternating order (a drift of the machine's speed falls on all of them alike); the
script's output goes to each trial's folder under RUN_DIR/trials, not to the terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO, Any

from gpubottle.clock import MIN_MEASURED
from gpubottle.evidence.trials import Trial, TrialsEvidence, setting_label
from gpubottle.options import TRIAL_ENV, RunOptions
from gpubottle.stats import mean_interval, mean_ratio_interval, median_interval
from gpubottle.trials.plan import BURST_SPANS, TrialPlan


@dataclass(frozen=True)
class TrialOptions:
    steps: int  # steps per trial run, warm-up included
    seconds: float  # wall-clock bound of one trial run
    rounds: int

    @classmethod
    def of(cls, opts: RunOptions) -> TrialOptions:
        return cls(opts.trial_steps, opts.trial_seconds, opts.trial_rounds)


def _command(opts: RunOptions, out: str, steps: int, topts: TrialOptions) -> list[str]:
    target = ["-m", opts.module] if opts.module else [str(opts.script)]
    return [sys.executable, "-m", "gpubottle", "run", "--no-stacks", "--no-gpu", "--no-status",
            "--profile-window", "off", "--steps", str(steps), "--duration", str(topts.seconds),
            "--out", out, *target, *opts.args]


def _one(opts: RunOptions, change: dict[str, Any], out: str, topts: TrialOptions, skip: int,
         steps: int) -> tuple[list[float], str | None, list[int]]:
    """Measured step durations of one trial run, or why there are none; and the batches each
    complete epoch of its main DataLoader yielded."""
    from gpubottle.sources import load_report

    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, **{TRIAL_ENV: json.dumps(change)})
    with open(os.path.join(out, "output.txt"), "w") as log:
        try:
            proc = subprocess.run(_command(opts, out, steps, topts), stdout=log,
                                  stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env, timeout=topts.seconds + 120)
        except subprocess.TimeoutExpired:
            return [], "did not end", []
    try:
        evidence = load_report(out).evidence
        measured = evidence.measured_durations()
        main = max(evidence.loaders, key=lambda lo: lo.batches, default=None)
        epochs = list(main.epoch_batches) if main is not None else []
    except Exception as exc:
        return [], f"no report ({exc})"[:200], []
    durations = measured[skip:]
    if proc.returncode != 0 and len(durations) < MIN_MEASURED:
        return [], f"the script failed with this setting (exit {proc.returncode}; see {out}/output.txt)", []
    if len(durations) < MIN_MEASURED:
        return [], (f"{len(measured)} steps measured, {skip} of them from batches the workers had "
                    "ready in advance: the script needs more steps per run for this setting"), []
    return durations, None, epochs


def run_trials(opts: RunOptions, plan: TrialPlan, trials_dir: str, topts: TrialOptions,
               progress: IO[str]) -> TrialsEvidence:
    settings = plan.settings
    rounds: list[list[list[float]]] = [[] for _ in settings]
    failed: dict[int, str] = {}
    short: set[int] = set()
    base_epoch: list[int] = []  # batches per complete epoch as the script is written
    total = len(settings) * topts.rounds
    done = 0
    t0 = time.monotonic()
    for r in range(topts.rounds):
        order = list(range(len(settings)))
        if r % 2:
            order.reverse()
        for i in order:
            done += 1
            if i in failed:
                continue
            print(f"gpubottle: trial {done}/{total}: {setting_label(settings[i])} "
                  f"({time.monotonic() - t0:.0f} s so far)", file=progress, flush=True)
            buffer = plan.buffered(settings[i])
            steps, why, epochs = _one(opts, settings[i], os.path.join(trials_dir, f"s{i}-r{r}"), topts,
                                      buffer, plan.steps_for(settings[i], topts.steps))
            if i == 0 and epochs:
                base_epoch = epochs
            elif why is None and epochs and base_epoch and _differ(epochs, base_epoch):
                why = (f"it changes the epoch: {epochs[0]} batches where the script as written yields "
                       f"{base_epoch[0]} (every worker reading the whole stream?): faster steps, not a "
                       "faster run")
            if why is not None:
                failed[i] = why
                continue
            rounds[i].append(steps)
            if buffer and not settings[i].get("replay") and len(steps) < BURST_SPANS * buffer // 2:
                short.add(i)  # a span of about one burst: the pace is rough
    # A setting the prediction says should gain, whose interval still straddles 1.0x: more rounds
    # (baseline and setting, alternating), within twice the time already spent.
    budget = 2 * (time.monotonic() - t0)
    for r in range(topts.rounds, topts.rounds + EXTRA_ROUNDS):
        todo = _unresolved(plan, settings, rounds, failed)
        if not todo or time.monotonic() - t0 > budget:
            break
        for i in ([0, *todo] if r % 2 == 0 else [*todo, 0]):
            print(f"gpubottle: one more round of {setting_label(settings[i])} (unresolved so far)",
                  file=progress, flush=True)
            steps, why, _epochs = _one(opts, settings[i], os.path.join(trials_dir, f"s{i}-r{r}"), topts,
                                       plan.buffered(settings[i]), plan.steps_for(settings[i], topts.steps))
            if why is None:
                rounds[i].append(steps)
    return _summarise(plan, settings, rounds, failed, short)


EXTRA_ROUNDS = 4
SOMETHING_TO_FIND = 1.1  # a predicted speed-up worth settling


def _unresolved(plan: TrialPlan, settings: list[dict[str, Any]], rounds: list[list[list[float]]],
                failed: dict[int, str]) -> list[int]:
    predicted = {json.dumps(c.change, sort_keys=True): c.predicted_speedup for c in plan.candidates}
    out = []
    for i in range(1, len(settings)):
        p = predicted.get(json.dumps(settings[i], sort_keys=True))
        if i in failed or not rounds[i] or not rounds[0] or settings[i].get("replay") or not p:
            continue
        _s, lo, hi = mean_ratio_interval(rounds[0], rounds[i])
        if lo <= 1.0 <= hi and p >= SOMETHING_TO_FIND:
            out.append(i)
    return out


def _differ(a: list[int], b: list[int]) -> bool:
    """Epochs of another size: more than 5% apart (a shuffled last batch moves them by one)."""
    return abs(a[0] - b[0]) > max(1.0, 0.05 * b[0])


def _summarise(plan: TrialPlan, settings: list[dict[str, Any]], rounds: list[list[list[float]]],
               failed: dict[int, str], short: frozenset[int] | set[int] = frozenset()
               ) -> TrialsEvidence:
    out = TrialsEvidence(steps_per_round=max((len(s) for r in rounds for s in r), default=0))
    base = rounds[0]
    predicted = {json.dumps(c.change, sort_keys=True): c.predicted_speedup for c in plan.candidates}
    for i, change in enumerate(settings):
        t = Trial(change=change, rounds=len(rounds[i]), steps=sum(len(s) for s in rounds[i]),
                  predicted_speedup=predicted.get(json.dumps(change, sort_keys=True)),
                  short=i in short)
        if i in failed or not rounds[i]:
            t.failed = failed.get(i, "too few steps measured")
        else:
            med, lo, hi = median_interval(rounds[i])
            t.median_s, t.interval_s = round(med, 6), [round(lo, 6), round(hi, 6)]
            mean, lo, hi = mean_interval(rounds[i])
            t.mean_s, t.mean_interval_s = round(mean, 6), [round(lo, 6), round(hi, 6)]
            if base and i > 0:
                s, slo, shi = mean_ratio_interval(base, rounds[i])
                t.speedup, t.speedup_interval = round(s, 3), [round(slo, 3), round(shi, 3)]
            elif i == 0:
                t.speedup = 1.0
        if change.get("replay"):
            out.upper_bound = t
        else:
            out.trials.append(t)
    floors = {json.dumps(c.change, sort_keys=True): c.floor_s for c in plan.candidates}
    for t in out.trials[1:]:
        floor = floors.get(json.dumps(t.change, sort_keys=True))
        if floor and t.mean_s is not None and t.mean_s < BELOW_FLOOR * floor:
            t.beyond = round(floor, 6)  # faster than the setting can make batches: made ahead
        if t.speedup_interval and t.speedup_interval[0] <= 1.0 <= t.speedup_interval[1] and (
                (t.predicted_speedup or 0.0) >= SOMETHING_TO_FIND):
            t.unresolved = True
    # The first fix's number must be one to trust: not from a run too short for the workers' pace,
    # nor faster than the setting can physically deliver.
    clear = [t for t in out.trials[1:] if t.speedup_interval and t.speedup_interval[0] > 1.0
             and not t.short and t.beyond is None]
    if clear:
        out.best = max(clear, key=lambda t: t.speedup or 0.0).change
    return out


BELOW_FLOOR = 0.8  # a measured step this far under what the setting's workers can produce
