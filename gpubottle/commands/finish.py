"""The end of a run, one path for `gpubottle run` and `gpubottle.profile()`: meta.json written from a
typed `RunMeta`, then the events read, the run (or the job's ranks) diagnosed, and the run
directory's report files written."""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from gpubottle.analysis.ranks import run_parts
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.collect.system import CoreBudget, core_budget, cpu_bf16
from gpubottle.commands.pictures import write_pictures
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.report import Report
from gpubottle.rules.jobs import diagnose_run
from gpubottle.rundir import RunDir
from gpubottle.serialisable import Serialisable


@dataclass
class RunMeta(Serialisable):
    """meta.json: what was run, where and when, and how it ended (the analysis reads it back as a
    dict, so a key added here reads as missing in older runs)."""

    command: list[str]
    target: str
    module: str | None = None
    args: list[str] = field(default_factory=list)
    nproc_per_node: int | None = None
    in_process: bool = False  # gpubottle.profile(): the profiled code ran in the caller's process
    cwd: str = ""
    started_at: str = ""
    python: str = ""
    platform: str = ""
    cores: CoreBudget | None = None
    cpu_bf16: bool | None = None  # the CPU computes bfloat16 natively (None: it does not say)
    sample_interval: float | None = None
    # How it ended.
    child_pid: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    duration_s: float | None = None
    # On the clock the script's probes share (CLOCK_MONOTONIC): the run's account starts and ends here.
    started_mono: float | None = None
    ended_mono: float | None = None
    sampler_errors: list[str] = field(default_factory=list)
    signals_received: list[int] = field(default_factory=list)
    collectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    stop_reason: str | None = None  # duration | interrupted | killed; else read from the events
    # One rank of a job a cluster's launcher started (launch/job.py), and its job folder.
    job: dict[str, Any] | None = None
    # In a notebook: the source of each cell the kernel ran (execution count -> code), so a fix at
    # "cell [N], line M" keeps its context in the report.
    cells: dict[str, str] = field(default_factory=dict)

    @classmethod
    def here(cls, command: list[str], target: str, sample_interval: float, **kwargs: Any) -> RunMeta:
        """A run starting now, on this machine."""
        return cls(command=command, target=target, cwd=os.getcwd(),
                   started_at=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                   python=platform.python_version(), platform=platform.platform(), cores=core_budget(),
                   cpu_bf16=cpu_bf16(), sample_interval=sample_interval, **kwargs)

    def ended(self, child_pid: int, exit_code: int, started_mono: float, ended_mono: float,
              stop_reason: str | None = None) -> None:
        self.child_pid, self.exit_code = child_pid, exit_code
        self.signal = -exit_code if exit_code < 0 else None
        self.duration_s = round(ended_mono - started_mono, 3)
        self.started_mono, self.ended_mono = started_mono, ended_mono
        self.stop_reason = stop_reason

    def write(self, rd: RunDir) -> None:
        try:
            rd.write_json(rd.meta, self.to_json())
        except OSError:
            pass  # an unwritable run directory loses the metadata, never the script's run


def save_report(rd: RunDir, report: Report, html_path: str | None, events: ChildEvents) -> None:
    """The run directory's evidence.json, report.json, index.html and timeline (and --html)."""
    rd.write_json(rd.evidence, report.evidence.to_json())
    rd.write_json(rd.report, report.to_contract())
    write_pictures(report, html_path, events=events)


JOB_REPORT_CLAIM = ".job-report"  # in a job folder: the rank that prints the job's report made it


def job_report_when_complete(folder: str, world_size: int, stream: IO[str]) -> bool:
    """The last rank of a job to finish writes and shows the job's report: when every rank's run
    directory in the job folder holds its report, the first to claim the folder (an exclusive
    create, safe on a shared file system) merges them. True when this process did."""
    from gpubottle.analysis.ranks import job_dirs
    from gpubottle.commands.output import emit
    from gpubottle.sources import load_reports

    dirs = job_dirs(folder)
    done = [d for d in dirs if os.path.isfile(RunDir(d).report)]
    if len(done) < world_size or len(dirs) > len(done):
        return False
    try:
        os.close(os.open(os.path.join(folder, JOB_REPORT_CLAIM), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return False  # another rank got there first (or the folder is read-only)
    try:
        report = load_reports(dirs, folder=folder)
        stream.write(f"\ngpubottle: every rank of the job has finished; the job's report "
                     f"(gpubottle report {folder}):\n")
        emit(report, stream, os.path.join(folder, "report.json"))
    except GpubottleError as exc:
        stream.write(f"gpubottle: the job's ranks could not be merged: {exc}\n")
    return True


def finish_run(rd: RunDir, meta: RunMeta, html_path: str | None,
               adjust: Callable[[Report], Report] | None = None) -> Report:
    """meta.json, then the report of what the run directory holds, saved into it. `adjust`: a step
    between the diagnosis and saving (`--try-fixes` times the fixes there)."""
    meta.write(rd)
    events = read_events(rd.events)
    if events.end and events.end.how == "bad-target":
        raise GpubottleError(str(events.end.detail), EXIT_BAD_INPUT)
    report = diagnose_run(run_parts(rd, events))
    if adjust is not None:
        report = adjust(report)
    save_report(rd, report, html_path, events)
    return report
