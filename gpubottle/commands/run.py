"""`gpubottle run`: run the script under instrumentation, then diagnose and report."""

from __future__ import annotations

import json
import os
import signal
import sys

from gpubottle.collect import procfs
from gpubottle.commands.meta import RunMeta
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.launch.collectors import Collectors
from gpubottle.launch.job import default_out, forget_earlier_job, job_rank, launches_ranks
from gpubottle.launch.supervisor import RunOutcome, RunRequest, Supervisor
from gpubottle.options import TRIAL_ENV, ChildConfig, RunOptions
from gpubottle.rundir import new_run_dir


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


def run_command(opts: RunOptions) -> int:
    opts.validate()
    if opts.script is not None:
        check_script(opts.script)
    launcher = launches_ranks(opts.script, opts.module, opts.nproc_per_node)
    rank = None if launcher else job_rank()
    rd = new_run_dir(opts.target, opts.out or default_out(opts.target, rank, launcher))
    meta = RunMeta.here(list(sys.argv), opts.target, 1.0 / opts.sample_hz, module=opts.module,
                        args=list(opts.args), nproc_per_node=opts.nproc_per_node,
                        process_start_mono=procfs.process_start_mono())
    if rank is not None:
        folder = os.path.dirname(rd.path) if opts.out is None else None
        meta.job = {**rank.to_json(), "folder": folder}
        if folder is not None and rank.rank == 0:
            forget_earlier_job(folder, rank.world_size)
    meta.write(rd)
    print(f"gpubottle: profiling {opts.target}"
          + (f" (rank {rank.rank} of {rank.world_size}, job {rank.job_id})" if rank is not None else "")
          + f"; saving to {rd.path}", file=sys.stderr, flush=True)
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
        rank=rank.wire() if rank is not None else None,
        # --duration: every rank stops at the step the first to reach it names (a collective would
        # hang otherwise), through a file in the job folder they share.
        stop_at=(os.path.join(os.path.dirname(rd.path), "stop-at")
                 if rank is not None and opts.out is None and opts.duration else None),
    )
    req = RunRequest(child=child, args=args, run_dir=rd, collectors=collectors,
                     live_status=opts.live_status)
    outcome = Supervisor(req).run()
    meta.collectors = collectors.status()
    _ended(meta, outcome)
    # The analysis is imported once the script has ended: imported before, its 0.2 s delayed the
    # script's start (gpubottle's own start is a cost of the run, said in its account).
    from gpubottle.commands.finish import finish_run, job_report_when_complete
    from gpubottle.commands.output import emit, write_patch
    from gpubottle.trials.session import try_fixes

    try:
        report = finish_run(rd, meta, opts.html_path,
                            (lambda r: try_fixes(opts, rd, r)) if opts.try_fixes else None)
        emit(report, sys.stderr, opts.json_path)
        if opts.patch_path:
            write_patch(report, opts.patch_path, sys.stderr)
        if meta.job and meta.job.get("folder"):
            job_report_when_complete(str(meta.job["folder"]), int(meta.job["world_size"]), sys.stderr)
    except GpubottleError:
        raise
    except Exception as exc:  # never lose the script's exit status to a reporting bug
        print(f"gpubottle: could not build the report ({exc!r}); the raw data is in {rd.path}",
              file=sys.stderr)
    return outcome.returncode


def _ended(meta: RunMeta, outcome: RunOutcome) -> None:
    rc = outcome.returncode
    stop = None
    if outcome.duration_forced:
        stop = "duration"
    elif rc < 0:
        stop = "interrupted" if -rc == signal.SIGINT else "killed"
    meta.ended(outcome.child_pid, rc, outcome.started_mono, outcome.ended_mono, stop)
    meta.sampler_errors, meta.signals_received = outcome.sampler_errors, outcome.signals_received
