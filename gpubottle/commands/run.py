"""`gpubottle run`: run the script under instrumentation, then diagnose and report."""

from __future__ import annotations

import datetime
import json
import os
import platform
import signal
import sys
from dataclasses import asdict

from gpubottle.analysis.ranks import run_parts
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.collect.system import core_budget
from gpubottle.commands.output import emit, write_patch
from gpubottle.commands.pictures import write_pictures
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.launch.collectors import Collectors
from gpubottle.launch.supervisor import RunOutcome, RunRequest, Supervisor
from gpubottle.options import ChildConfig, RunOptions
from gpubottle.report import Report
from gpubottle.rules.jobs import diagnose_run
from gpubottle.rundir import RunDir, new_run_dir
from gpubottle.trials.runner import TRIAL_ENV
from gpubottle.trials.session import try_fixes


def check_script(path: str) -> None:
    if not os.path.exists(path):
        raise GpubottleError(f"no such script: {path}", EXIT_BAD_INPUT)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "__main__.py")):
            return
        raise GpubottleError(f"{path} is a directory, not a Python script", EXIT_BAD_INPUT)
    try:
        with open(path, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        raise GpubottleError(f"cannot read {path}: {exc.strerror}", EXIT_BAD_INPUT) from exc
    if path.endswith((".py", ".pyw")):
        return  # a syntax error is the script's own, reported by Python as usual
    try:
        compile(source, path, "exec")
    except (SyntaxError, ValueError) as exc:
        raise GpubottleError(
            f"{path} is not a Python script", EXIT_BAD_INPUT,
            hint="gpubottle run takes a .py file or -m package.module",
        ) from exc


def _write_meta(rd: RunDir, meta: dict[str, object]) -> None:
    try:
        rd.write_json(rd.meta, meta)
    except OSError:
        pass


def _trial_change() -> dict[str, object] | None:
    """The setting of a `--try-fixes` trial run (trials/runner.py), None in the user's own run."""
    raw = os.environ.pop(TRIAL_ENV, None)  # not for the script's own subprocesses
    if not raw:
        return None
    try:
        change = json.loads(raw)
    except ValueError:
        return None
    return change if isinstance(change, dict) else None


def machine_meta(sample_interval: float) -> dict[str, object]:
    """What meta.json says of where and when a run ran (run's and gpubottle.profile's)."""
    return {
        "cwd": os.getcwd(),
        "started_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cores": asdict(core_budget()),
        "sample_interval": sample_interval,
    }


def save_report(rd: RunDir, report: Report, html_path: str | None, events: ChildEvents) -> None:
    """The run directory's evidence.json, report.json, index.html and timeline (and --html)."""
    rd.write_json(rd.evidence, report.evidence.to_json())
    rd.write_json(rd.report, report.to_contract())
    write_pictures(report, html_path, events=events)


def run_command(opts: RunOptions) -> int:
    opts.validate()
    if opts.script is not None:
        check_script(opts.script)
    rd = new_run_dir(opts.target, opts.out)
    meta: dict[str, object] = {
        "command": list(sys.argv),
        "target": opts.target,
        "module": opts.module,
        "args": opts.args,
        "nproc_per_node": opts.nproc_per_node,
        **machine_meta(1.0 / opts.sample_hz),
    }
    _write_meta(rd, meta)
    print(f"gpubottle: profiling {opts.target}; saving to {rd.path}", file=sys.stderr, flush=True)
    collectors = Collectors(rd, 1.0 / opts.sample_hz, opts.stacks, opts.stack_rate, opts.gpu)
    # Absolute paths: the script may chdir before the child writes its window trace or snapshot.
    script, module, args = opts.launch()
    child = ChildConfig(
        events=os.path.abspath(rd.events), script=script, module=module, steps=opts.steps,
        duration=opts.duration, window=opts.window_config(os.path.abspath(rd.window_trace)),
        snapshot=(os.path.abspath(os.path.join(rd.path, "cuda-memory-snapshot.pickle"))
                  if opts.memory_snapshot else None),
        census_request=os.path.abspath(rd.census_request),
        trial=_trial_change(),
    )
    req = RunRequest(child=child, args=args, run_dir=rd, collectors=collectors,
                     live_status=opts.live_status)
    outcome = Supervisor(req).run()
    meta["collectors"] = collectors.status()
    _finish_meta(rd, meta, outcome)
    events = read_events(rd.events)
    if events.end and events.end.how == "bad-target":
        raise GpubottleError(str(events.end.detail), EXIT_BAD_INPUT)
    try:
        report = diagnose_run(run_parts(rd, events))
        if opts.try_fixes:
            report = try_fixes(opts, rd, report)
        save_report(rd, report, opts.html_path, events)
        emit(report, sys.stderr, opts.json_path)
        if opts.patch_path:
            write_patch(report, opts.patch_path, sys.stderr)
    except GpubottleError:
        raise
    except Exception as exc:  # never lose the script's exit status to a reporting bug
        print(f"gpubottle: could not build the report ({exc!r}); the raw data is in {rd.path}",
              file=sys.stderr)
    return outcome.returncode


def _finish_meta(rd: RunDir, meta: dict[str, object], outcome: RunOutcome) -> None:
    rc = outcome.returncode
    meta.update(
        child_pid=outcome.child_pid,
        exit_code=rc,
        signal=-rc if rc < 0 else None,
        duration_s=round(outcome.ended_mono - outcome.started_mono, 3),
        # On the clock the script's probes share (CLOCK_MONOTONIC): the run's account starts and
        # ends here.
        started_mono=outcome.started_mono,
        ended_mono=outcome.ended_mono,
        sampler_errors=outcome.sampler_errors,
        signals_received=outcome.signals_received,
    )
    if outcome.duration_forced:
        meta["stop_reason"] = "duration"
    elif rc < 0:
        meta["stop_reason"] = "interrupted" if -rc == signal.SIGINT else "killed"
    _write_meta(rd, meta)


def exit_like(returncode: int) -> None:
    """End gpubottle the way the script ended: same status, or the same signal."""
    sys.stdout.flush()
    sys.stderr.flush()
    if returncode < 0:
        sig = -returncode
        try:
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        sys.exit(128 + sig)
    sys.exit(returncode)
