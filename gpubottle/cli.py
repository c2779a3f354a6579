"""The command line: `gpubottle run`, `gpubottle report`, `gpubottle gate`. It parses options only;
each command is gpubottle/commands/. Errors become one line and an exit code."""

from __future__ import annotations

import shlex
import sys
from typing import List, Optional

import typer

from gpubottle import __version__, plain_options
from gpubottle import options as opt
from gpubottle.collect.process_tree import tree_schedule
from gpubottle.collect.stacks import stack_schedule
from gpubottle.errors import GpubottleError, exit_like, failure_code
from gpubottle.run_args import VALUED
from gpubottle.vocabulary import FINDINGS

plain_options.install()  # typer's pydantic coercion costs ~0.1 s of CPU a command (plain_options)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Tell why a PyTorch training run is slow, and what to change.\n\n"
    "Exit codes: the script's own status for `run`; `gate`: 1 a budget failed, 5 undecided; "
    "2 bad usage; 3 bad input (missing script, unreadable or corrupt trace, not a run or report); "
    "4 internal error.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpubottle {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    pass


@app.command(
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    no_args_is_help=True,
)
def run(
    script: Optional[str] = typer.Argument(
        None, help="The training script (or, with -m, its first argument)."
    ),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments passed to the script unchanged."),
    module: Optional[str] = typer.Option(None, "-m", "--module", help="Run a module, like python -m."),
    out: Optional[str] = typer.Option(None, "--out", "-o",
                                      help="Run directory [default: gpubottle-runs/<script>-<time>; one rank "
                                      "of a job a cluster launched (srun, mpirun: the rank in its "
                                      "environment): gpubottle-runs/<script>-<job id>/rank<R>, which "
                                      "`gpubottle report` merges]."),
    json_path: Optional[str] = typer.Option(None, "--json", help="Also write the report JSON here."),
    html_path: Optional[str] = typer.Option(
        None, "--html", help="Also write the report as one self-contained HTML file here (every run "
        "directory gets index.html and timeline.json, for Perfetto, anyway)."),
    patch_path: Optional[str] = typer.Option(
        None, "--patch", help="Also write the fixes' code changes here as a unified diff (git apply "
        "PATH, from the directory you ran in); gpubottle never edits your files."),
    steps: Optional[int] = typer.Option(
        None, "--steps", help="Stop the script after N training steps (optimizer.step() calls; "
        "backward() calls without torch.optim; batches in inference loops)."),
    duration: Optional[float] = typer.Option(None, "--duration",
                                             help="Stop the script SECONDS after launch."),
    no_status: bool = typer.Option(False, "--no-status", help="No live status line."),
    sample_hz: float = typer.Option(opt.DEFAULT_SAMPLE_HZ, "--sample-hz",
                                    help="Sampling rate of the process tree's CPU and memory at first "
                                    f"(1-100); by default {tree_schedule(opt.DEFAULT_SAMPLE_HZ)}."),
    no_stacks: bool = typer.Option(False, "--no-stacks", help="Do not sample Python stacks with py-spy."),
    stack_rate: int = typer.Option(opt.DEFAULT_STACK_RATE, "--stack-rate",
                                   help="py-spy samples per second at first; by default "
                                   f"{stack_schedule(opt.DEFAULT_STACK_RATE)}."),
    profile_window: str = typer.Option(
        "auto", "--profile-window",
        help="torch.profiler window of a few steps: auto (GPU runs), on (also CPU), off."),
    window_start: int = typer.Option(opt.DEFAULT_WINDOW_START, "--window-start",
                                     help="Step at which the window opens."),
    window_steps: int = typer.Option(opt.DEFAULT_WINDOW_STEPS, "--window-steps",
                                     help="Steps the window records."),
    no_gpu: bool = typer.Option(False, "--no-gpu", help="Do not sample GPUs with NVML."),
    memory_snapshot: bool = typer.Option(
        False, "--memory-snapshot",
        help="Record CUDA allocations and save a snapshot (for pytorch.org/memory_viz)."),
    try_fixes: bool = typer.Option(
        False, "--try-fixes",
        help="After the diagnosis, time the proposed settings (num_workers, persistent_workers, "
        "prefetch_factor, pin_memory, torch threads; their neighbours too) and an upper bound with "
        "input free, in bounded runs of the script with the setting applied from outside the code; "
        "the fastest measured setting becomes the first fix. The script runs again per trial."),
    trial_steps: int = typer.Option(opt.DEFAULT_TRIAL_STEPS, "--trial-steps",
                                    help="Steps per trial run, warm-up included."),
    trial_seconds: float = typer.Option(opt.DEFAULT_TRIAL_SECONDS, "--trial-seconds",
                                        help="Wall-clock bound of one trial run."),
    trial_rounds: int = typer.Option(opt.DEFAULT_TRIAL_ROUNDS, "--trial-rounds",
                                     help="Runs of each setting, in alternating order."),
    nproc_per_node: Optional[int] = typer.Option(
        None, "--nproc-per-node", help="Run the script as N ranks on this machine through torchrun "
        "(torch.distributed.run); every rank is profiled, and the report has a row per rank and "
        "names the one the others wait for. Also: gpubottle run -m torch.distributed.run ..., or a "
        "script that calls mp.spawn."),
    torchrun_args: Optional[str] = typer.Option(
        None, "--torchrun-args", help="More torchrun options, quoted: \"--nnodes 2 --node-rank 0 "
        "--master-addr HOST\" (each node's run directory: merge with gpubottle report DIR...)."),
    yes: bool = typer.Option(False, "--yes", "-y",
                             help="Run the trials without asking (the script's side effects, such "
                             "as checkpoints and logs, happen again in every trial)."),
) -> None:
    """Run a training script unchanged under instrumentation and name its bottleneck.

    Everything after the script path goes to the script: gpubottle run train.py --epochs 3.
    The script's output, exit status and signals pass through; the verdict is printed to stderr
    when it ends (also after a crash, Ctrl-C, --steps or --duration).
    """
    from gpubottle.commands.run import run_command

    extra = list(args or [])
    if module is not None and script is not None:
        extra.insert(0, script)
        script = None
    elif script is not None and script.startswith("-") and script != "-":
        raise GpubottleError(f"no such option: {script}", 2, hint="gpubottle run --help lists them")
    options = opt.RunOptions(
        script=script, module=module, args=extra, out=out, json_path=json_path, html_path=html_path,
        patch_path=patch_path,
        steps=steps,
        duration=duration, live_status=not no_status, sample_hz=sample_hz, stacks=not no_stacks,
        stack_rate=stack_rate, window=profile_window, window_start=window_start,
        window_steps=window_steps, gpu=not no_gpu, memory_snapshot=memory_snapshot,
        try_fixes=try_fixes, trial_steps=trial_steps, trial_seconds=trial_seconds,
        trial_rounds=trial_rounds, yes=yes, nproc_per_node=nproc_per_node,
        torchrun_args=_split(torchrun_args),
    )
    raise typer.Exit(run_command(options))


def _split(text: str | None) -> list[str]:
    try:
        return shlex.split(text or "")
    except ValueError as exc:
        raise GpubottleError(f"--torchrun-args: {exc}", 2) from exc


@app.command()
def report(
    paths: List[str] = typer.Argument(
        ..., help="A torch.profiler trace (.json, .json.gz), a folder of them, a run directory from "
        "`gpubottle run`, or a report.json; several run directories: one multi-node job's, merged.",
        metavar="PATH..."),
    json_path: Optional[str] = typer.Option(None, "--json", help="Also write the report JSON here."),
    fmt: str = typer.Option("text", "--format", help="text or json (to stdout)."),
    html_path: Optional[str] = typer.Option(
        None, "--html", help="Also write the report as one self-contained HTML file here (with "
        "charts over time for a run directory)."),
    patch_path: Optional[str] = typer.Option(
        None, "--patch", help="Also write the fixes' code changes here as a unified diff (for a "
        "saved run: git apply PATH from the directory it ran in)."),
) -> None:
    """Explain a torch.profiler trace, or a saved run again without re-running it.

    Traces of any size are read as a stream (torch is not imported); a folder is read as the ranks
    or workers of one run. A truncated trace is analysed as far as it goes. The run directories
    that each node's `gpubottle run` wrote for one multi-node job merge into one job report:
    gpubottle report node0-run node1-run.
    """
    from gpubottle.commands.report import report_command

    if fmt not in ("text", "json"):
        raise GpubottleError("--format must be text or json", 2)
    raise typer.Exit(report_command(paths, json_path, fmt, html_path, patch_path))


@app.command()
def gate(
    current: str = typer.Argument(..., help="This build's run directory, report.json or trace."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b",
                                           help="The reference run directory, report.json or trace."),
    max_regression: Optional[str] = typer.Option(
        None, "--max-regression", help="Step-time budget vs the baseline, e.g. 10% [default: 5%; off]."),
    forbid: Optional[str] = typer.Option(
        None, "--forbid", help="Findings that fail the gate when they are the verdict or at least a "
        f"warning, comma-separated: {', '.join(FINDINGS)}."),
    min_gpu_busy: Optional[str] = typer.Option(None, "--min-gpu-busy", help="e.g. 60%."),
    max_peak_memory: Optional[str] = typer.Option(None, "--max-peak-memory", help="e.g. 20GiB."),
    junit: Optional[str] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    markdown: Optional[str] = typer.Option(None, "--markdown", help="Write a Markdown summary here."),
    config: Optional[str] = typer.Option(
        None, "--config", help="pyproject.toml with [tool.gpubottle.gate] [default: ./pyproject.toml]."
    ),
    allow_inconclusive: bool = typer.Option(False, "--allow-inconclusive",
                                            help="Exit 0 when nothing failed but something was undecided."),
) -> None:
    """Fail a CI build when training got slower or a forbidden bottleneck appears.

    Step times are compared as distributions: a 95% bootstrap interval of the ratio of mean step
    times (the mean sets throughput; warm-up and long pauses are left out). A difference inside the
    noise is reported as such, not as a pass or a fail. Exit codes: 0 passed; 1 a budget failed;
    5 undecided (inside the noise or unmeasured; 0 with --allow-inconclusive); 2 bad usage; 3 bad
    input. In GitHub Actions it also writes annotations and a step summary.
    """
    from gpubottle.commands.gate import gate_command

    raise typer.Exit(gate_command(current, baseline, max_regression, forbid, min_gpu_busy,
                                  max_peak_memory, junit, markdown, config, allow_inconclusive))


@app.command()
def compare(
    before: str = typer.Argument(..., help="The first run: its run directory or report JSON.",
                                 metavar="BEFORE"),
    after: str = typer.Argument(..., help="The run after the change: its run directory or report JSON.",
                                metavar="AFTER"),
    json_path: Optional[str] = typer.Option(None, "--json",
                                            help="Also write the comparison (gpubottle.compare/1) here."),
    html_path: Optional[str] = typer.Option(
        None, "--html", help="Also write it as one HTML file: both runs' phases on one time scale."),
) -> None:
    """Did the change work? Two runs of a script side by side, the first report's advice held
    against the second.

    Says the wall time and the step before and after (the step's speed-up with a 95% bootstrap
    interval), each phase of the run's account, the verdicts, every setting gpubottle records that
    changed (DataLoader arguments at their site, thread counts, the script's options, torch, the
    machine) and, for each fix the first report gave, whether the change applied it and what it
    promised beside what was measured. Exit codes: 0 compared; 2 bad usage; 3 bad input.
    """
    from gpubottle.commands.compare import compare_command

    raise typer.Exit(compare_command(before, after, json_path, html_path))


def module_args(argv: list[str]) -> list[str]:
    """`gpubottle run [OPTIONS] -m MODULE ARGS...` as python reads `-m`: everything after the
    module's name is the module's (torchrun's `--nproc-per-node 2 --standalone train.py` included,
    though gpubottle has a `--nproc-per-node` of its own)."""
    if "run" not in argv:
        return argv
    i = argv.index("run") + 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv
        if a in ("-m", "--module") and i + 1 < len(argv):
            return [*argv[:i + 2], "--", *argv[i + 2:]]
        if (a.startswith("-m") and len(a) > 2 and not a.startswith("--")) or a.startswith("--module="):
            return [*argv[:i + 1], "--", *argv[i + 1:]]
        if a.startswith("-") and "=" not in a and a in VALUED:  # (run's options that take one)
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return argv  # the script: the rest is its own already
    return argv


def main(argv: list[str] | None = None) -> int:
    """`gpubottle ARGS`, in this process: the exit code (what `gpubottle` exits with), for tests and
    for callers (a `run` ends the process the way its script ended, see errors.exit_like)."""
    args = module_args(list(sys.argv[1:] if argv is None else argv))
    try:
        # Not standalone: click returns a command's exit code (typer.Exit) instead of exiting.
        code = app(args=args, prog_name="gpubottle", standalone_mode=False)
    except typer.Exit as done:  # --help, --version, a command's own exit code
        return int(done.exit_code)
    except typer.Abort:
        return 130
    except (Exception, KeyboardInterrupt) as exc:
        usage = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(usage, int):
            show()  # a usage error (click's, however this typer ships it): usage line and why
            return usage
        return failure_code(exc)  # ours, Ctrl-C, or a bug in gpubottle
    return code if isinstance(code, int) else 0


def entry() -> None:
    """The `gpubottle` command: exits as main() says (as the script did, for `run`: its status, or
    by the same signal)."""
    exit_like(main())
