"""`--try-fixes` after the diagnosis: plan, ask once, time the settings, diagnose again with them."""

from __future__ import annotations

import os
import sys

from gpubottle.evidence.trials import setting_label
from gpubottle.options import RunOptions
from gpubottle.report import Report
from gpubottle.rules import diagnose
from gpubottle.rundir import RunDir
from gpubottle.trials.plan import plan_trials
from gpubottle.trials.runner import TrialOptions, run_trials


def _confirmed(opts: RunOptions, runs: int) -> bool:
    """The script runs `runs` more times: anything it writes (checkpoints, logs) is written again."""
    print(f"gpubottle: --try-fixes runs {opts.target} {runs} more times (each at most "
          f"{opts.trial_steps} steps or {opts.trial_seconds:.0f} s); whatever it writes (checkpoints, "
          "logs) is written again", file=sys.stderr, flush=True)
    if opts.yes:
        return True
    if not sys.stdin.isatty():
        print("gpubottle: no terminal to ask: trials skipped (add --yes to run them)",
              file=sys.stderr, flush=True)
        return False
    print("gpubottle: go ahead? [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        return sys.stdin.readline().strip().lower() in ("y", "yes")
    except (OSError, KeyboardInterrupt):
        return False


def try_fixes(opts: RunOptions, rd: RunDir, report: Report) -> Report:
    if report.evidence.ranks:  # a trial would time the launcher's job as one process: not yet
        print("gpubottle: --try-fixes times single-process runs; this job's ranks were not tried",
              file=sys.stderr, flush=True)
        return report
    plan = plan_trials(report)
    if not plan.candidates and not plan.upper_bound:
        print("gpubottle: --try-fixes: no fix changes a setting that can be applied from outside the "
              "code" + (f" ({'; '.join(plan.skipped)} need an edit)" if plan.skipped else ""),
              file=sys.stderr, flush=True)
        return report
    settings = plan.settings
    print("gpubottle: --try-fixes will time: " + "; ".join(setting_label(c) for c in settings),
          file=sys.stderr, flush=True)
    if not _confirmed(opts, len(settings) * opts.trial_rounds):
        return report
    try:
        trials = run_trials(opts, plan, os.path.join(rd.path, "trials"), TrialOptions.of(opts),
                            sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C stops the trials, never the diagnosis already made
        print("gpubottle: trials interrupted: the report is the diagnosis alone",
              file=sys.stderr, flush=True)
        return report
    ev = report.evidence
    ev.trials = trials
    return diagnose(ev)
