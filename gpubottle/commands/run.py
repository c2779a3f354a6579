"""`gpubottle run`: run the script under instrumentation, then diagnose and report."""

from __future__ import annotations

import datetime
import os
import platform
import signal
import sys
from dataclasses import asdict

from gpubottle.analysis.build import build_evidence
from gpubottle.collect.events import read_events
from gpubottle.collect.nvml import NvmlSampler
from gpubottle.collect.stacks import StackSampler
from gpubottle.collect.system import core_budget
from gpubottle.commands.output import emit
from gpubottle.errors import EXIT_BAD_INPUT, EXIT_USAGE, GpubottleError
from gpubottle.launch.supervisor import RunOutcome, RunRequest, Supervisor
from gpubottle.rules import diagnose
from gpubottle.rundir import RunDir, new_run_dir


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


def run_command(
    script: str | None, module: str | None, args: list[str], out: str | None, json_path: str | None,
    steps: int | None, duration: float | None, live_status: bool, sample_hz: float,
    stacks: bool = True, stack_rate: int = 20, window: str = "auto", window_start: int = 10,
    window_steps: int = 5, gpu: bool = True, memory_snapshot: bool = False,
) -> int:
    if script is None and module is None:
        raise GpubottleError("no script given: gpubottle run train.py [ARGS...]", EXIT_USAGE)
    if script is not None:
        check_script(script)
    if steps is not None and steps < 1:
        raise GpubottleError("--steps must be at least 1", EXIT_USAGE)
    if duration is not None and duration <= 0:
        raise GpubottleError("--duration must be positive", EXIT_USAGE)
    if not 1 <= sample_hz <= 100:
        raise GpubottleError("--sample-hz must be between 1 and 100", EXIT_USAGE)
    if not 1 <= stack_rate <= 1000:
        raise GpubottleError("--stack-rate must be between 1 and 1000", EXIT_USAGE)
    target = script or str(module)
    rd = new_run_dir(target, out)
    meta: dict[str, object] = {
        "command": list(sys.argv),
        "target": target,
        "module": module,
        "args": args,
        "cwd": os.getcwd(),
        "started_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cores": asdict(core_budget()),
        "sample_interval": 1.0 / sample_hz,
    }
    _write_meta(rd, meta)
    print(f"gpubottle: profiling {target}; saving to {rd.path}", file=sys.stderr, flush=True)
    sampler = StackSampler(rd.stacks, rate=stack_rate) if stacks else None
    gpu_out = open(rd.gpu_samples, "a") if gpu else None  # noqa: SIM115 - closed below
    nvml = NvmlSampler(gpu_out) if gpu_out is not None else None
    if window not in ("auto", "on", "off"):
        raise GpubottleError("--profile-window must be auto, on or off", EXIT_USAGE)
    win = None if window == "off" else {
        "start": window_start, "steps": window_steps, "path": os.path.abspath(rd.window_trace),
        "force": window == "on"}
    req = RunRequest(
        script=script, module=module, args=args, run_dir=rd, steps=steps, duration=duration,
        live_status=live_status, sample_interval=1.0 / sample_hz,
        extra_collectors=[c for c in (sampler, nvml) if c is not None], window=win,
        snapshot=(os.path.abspath(os.path.join(rd.path, "cuda-memory-snapshot.pickle"))
                  if memory_snapshot else None),
    )
    try:
        outcome = Supervisor(req).run()
    finally:
        if gpu_out is not None:
            gpu_out.close()
    meta["collectors"] = {
        "py-spy": sampler.status() if sampler else {"ok": False, "reason": "turned off (--no-stacks)"},
        "nvml": nvml.status() if nvml else {"ok": False, "reason": "turned off (--no-gpu)"},
    }
    _finish_meta(rd, meta, outcome)
    events = read_events(rd.events)
    if events.end and events.end[0] == "bad-target":
        raise GpubottleError(str(events.end[1]), EXIT_BAD_INPUT)
    try:
        evidence = build_evidence(rd, events)
        report = diagnose(evidence)
        rd.write_json(rd.evidence, evidence.to_json())
        rd.write_json(rd.report, report.to_contract())
        emit(report, sys.stderr, json_path)
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
