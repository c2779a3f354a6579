"""What `report` and `gate` accept, loaded into a diagnosed Report: a saved run directory (its
evidence, or its raw data when it never finished), a report JSON, or torch.profiler traces."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

from gpubottle.analysis.ranks import job_dirs, merge_dirs, missing_ranks, run_parts, saved_parts
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.evidence import Evidence
from gpubottle.report import SCHEMA, Report
from gpubottle.rules import diagnose
from gpubottle.rules.jobs import diagnose_job, diagnose_run
from gpubottle.rundir import RunDir
from gpubottle.trace.load import trace_evidence
from gpubottle.trace.progress import ReadProgress


def _is_report(path: str) -> bool:
    """Our report JSON starts with its schema; a trace (maybe huge, maybe gzip) does not."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError as exc:
        raise GpubottleError(f"cannot read {path}: {exc.strerror}", EXIT_BAD_INPUT) from exc
    return b'"schema"' in head and SCHEMA.encode() in head


def load_reports(paths: list[str], folder: str | None = None,
                 progress: ReadProgress | None = None) -> Report:
    """One path as load_report; several: the run directories of one job's nodes or ranks, merged
    (`folder`: the job folder they were found in). `progress`: shown while traces are read."""
    if len(paths) == 1 and folder is None:
        return load_report(paths[0], progress)
    for path in paths:
        if not os.path.exists(path):
            raise GpubottleError(f"no such file or directory: {path}", EXIT_BAD_INPUT)
    parts = merge_dirs(paths)
    report = diagnose_job(parts, None, missing_ranks(parts))
    report.evidence.run.run_dir = folder or ", ".join(paths)  # run facts only: rules do not read them
    report.evidence.run.duration_s = max((e.run.duration_s or 0.0 for e, _ in parts), default=None) or None
    return report


def load_report(path: str, progress: ReadProgress | None = None) -> Report:
    if not os.path.exists(path):
        raise GpubottleError(f"no such file or directory: {path}", EXIT_BAD_INPUT)
    if os.path.isdir(path):
        rd = RunDir(path)
        if os.path.isfile(rd.evidence):
            saved = _read_json(rd.evidence)
            if not isinstance(saved, dict):
                raise GpubottleError(f"{rd.evidence} is not gpubottle evidence", EXIT_BAD_INPUT)
            ev = Evidence.from_json(saved)
            if rd.ranks():  # a job: its ranks are diagnosed again from their own evidence
                return diagnose_job(saved_parts(rd), ev.run)
            return diagnose(ev)
        if rd.is_run():  # the run ended before its evidence was written: rebuild from raw data
            rd = RunDir(os.path.abspath(path))
            with _in_run_cwd(rd):
                return diagnose_run(run_parts(rd))
        ranks = job_dirs(path)
        if ranks:  # a job folder: each rank's (or node's) run directory, merged
            return load_reports(ranks, folder=path)
        return diagnose(trace_evidence(path, progress))  # a folder of traces (ranks or workers)
    if _is_report(path):
        data = _read_json(path)
        if isinstance(data, dict) and data.get("schema") == SCHEMA:
            return diagnose(Evidence.from_json(data["evidence"]))
    return diagnose(trace_evidence(path, progress))


@contextlib.contextmanager
def _in_run_cwd(rd: RunDir) -> Iterator[None]:
    """The run's own working directory while its raw data are read: its stacks and probes name the
    script's files as the script saw them, relative to it, and the analysis reads those files (a run
    directory rebuilt from another folder lost every finding read from the source, and named its
    lines relative to the wrong folder). Where that folder is gone (a run copied from another
    machine), the current one."""
    cwd, here = rd.read_meta().get("cwd"), os.getcwd()
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        yield
        return
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)


def _read_json(path: str) -> object:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise GpubottleError(f"cannot read {path}: {exc.strerror}", EXIT_BAD_INPUT) from exc
    if not raw.strip():
        raise GpubottleError(f"{path} is empty", EXIT_BAD_INPUT)
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise GpubottleError(f"{path} is not valid JSON ({exc})", EXIT_BAD_INPUT) from exc
