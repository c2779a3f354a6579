"""The end of a run, one path for `gpubottle run` and `gpubottle.profile()`: meta.json written from a
typed `RunMeta`, then the events read, the run (or the job's ranks) diagnosed, and the run
directory's report files written."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO

from gpubottle.analysis.ranks import run_parts
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.commands.meta import RunMeta
from gpubottle.commands.pictures import write_pictures
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.report import Report
from gpubottle.rules.jobs import diagnose_run
from gpubottle.rundir import RunDir


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
    meta.at_end()
    meta.write(rd)
    events = read_events(rd.events)
    if events.end and events.end.how == "bad-target":
        raise GpubottleError(str(events.end.detail), EXIT_BAD_INPUT)
    report = diagnose_run(run_parts(rd, events))
    if adjust is not None:
        report = adjust(report)
    save_report(rd, report, html_path, events)
    return report
