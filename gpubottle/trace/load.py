"""From trace files (one, or a folder of ranks/workers) to the evidence the rules read."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.evidence import (
    CollectorStatus,
    Evidence,
    LoaderInfo,
    RankEvidence,
    RunInfo,
    StepEvidence,
    TraceReadInfo,
)
from gpubottle.trace.breakdown import Breakdown, breakdown
from gpubottle.trace.collect import EVENTS_DECODER, TraceData
from gpubottle.trace.gpu import gpu_evidence
from gpubottle.trace.parallel import read_in_parts
from gpubottle.trace.progress import ReadProgress
from gpubottle.trace.reader import Batch, ReadResult, read_trace

TRACE_SUFFIXES = (".json", ".json.gz")
_OWN_FILES = {"meta.json", "evidence.json", "report.json"}


@dataclass
class TraceFile:
    path: str
    data: TraceData
    bd: Breakdown
    read: ReadResult

    @property
    def rank(self) -> int | None:
        info = self.read.meta.get("distributedInfo")
        rank = info.get("rank") if isinstance(info, dict) else None
        return int(rank) if isinstance(rank, int) else None

    @property
    def mean_step_s(self) -> float | None:
        return self.bd.avg_step_us * 1e-6 if self.bd.steps else None


def find_traces(path: str) -> list[str]:
    if not os.path.isdir(path):
        return [path]
    found = sorted(
        os.path.join(path, n) for n in os.listdir(path)
        if n.endswith(TRACE_SUFFIXES) and n not in _OWN_FILES and os.path.isfile(os.path.join(path, n))
    )
    if not found:
        raise GpubottleError(f"{path} holds no trace files (*.json, *.json.gz)", EXIT_BAD_INPUT)
    return found


# torch's tensorboard_trace_handler names each trace "<host>_<pid>.<time_ns>.pt.trace.json[.gz]":
# one process's cycles of a schedule with repeat= share the name before the time.
_HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ns>\d{6,})\.pt\.trace\.json(?:\.gz)?$")


def latest_cycles(paths: list[str]) -> tuple[list[str], list[str]]:
    """One trace per process: where tensorboard_trace_handler wrote several cycles of one process,
    the last (its steps are the run's latest pace; the earlier ones are the same process, not
    other ranks). The paths kept, in their order, and a note for each process left with one."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for p in paths:
        m = _HANDLER_NAME.match(os.path.basename(p))
        if m:
            groups.setdefault(m.group("worker"), []).append((int(m.group("ns")), p))
    dropped: set[str] = set()
    notes = []
    for worker, cycles in groups.items():
        if len(cycles) > 1:
            cycles.sort()
            dropped.update(p for _ns, p in cycles[:-1])
            notes.append(f"{worker}: {len(cycles)} profiler cycles of one process (a schedule with "
                         f"repeat); the last, {os.path.basename(cycles[-1][1])}, is read")
    return [p for p in paths if p not in dropped], notes


def analyse_file(path: str, progress: ReadProgress | None = None) -> TraceFile:
    on_read = None
    if progress is not None:
        progress.start(os.path.basename(path), _size(path))
        on_read = progress.advance
    parts = read_in_parts(path, on_read)
    if parts is not None:
        data, read = parts
    else:
        data = TraceData()
        read = read_trace(path, data.on_event, Batch(EVENTS_DECODER, data.on_batch), on_read=on_read)
    if progress is not None:
        progress.stage(f"analysing {read.events:,} events")
    if not data.usable and not read.truncated:
        raise GpubottleError(
            f"{path} holds no profiler events gpubottle can use ({read.events} events"
            + (f", {data.malformed + read.skipped} malformed" if data.malformed + read.skipped else "")
            + ")", EXIT_BAD_INPUT, hint="record it with torch.profiler and export_chrome_trace")
    return TraceFile(path, data, breakdown(data), read)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _steps(tf: TraceFile) -> StepEvidence:
    bd = tf.bd
    return StepEvidence(
        source="trace-optimizer" if bd.by_optimizer else "profiler",
        durations_s=[(e - s) * 1e-6 for s, e in bd.steps],
        input_wait_s=[p["dataloader"] * 1e-6 for p in bd.per_step],
        input_wait_cpu_s=[None] * len(bd.steps),
        input_wait_run_queue_s=[None] * len(bd.steps),
        # The profiler's schedule already skipped its warm-up steps; without one, the first step
        # (from the trace's first op: the profiler starting, lazy initialisation) is left out.
        warmup=1 if bd.by_optimizer and len(bd.steps) > 2 else 0,
        batches=sum(tf.data.loader_kinds.values()),
    )


def _loaders(tf: TraceFile) -> list[LoaderInfo]:
    kinds = tf.data.loader_kinds
    if not kinds:
        return []
    single = "_SingleProcessDataLoaderIter" in kinds and len(kinds) == 1
    return [LoaderInfo(
        id=1, num_workers=0 if single else None, batches=sum(kinds.values()),
        iterators=1, site=None,
    )]


def trace_evidence(path: str, progress: ReadProgress | None = None) -> Evidence:
    paths, cycle_notes = latest_cycles(find_traces(path))
    files = [analyse_file(p, progress) for p in paths]
    timed = [f for f in files if f.mean_step_s is not None]
    # In synchronous data-parallel training every rank waits for the slowest: it sets the pace.
    main = max(timed, key=lambda f: f.mean_step_s or 0.0) if timed else files[0]
    read = TraceReadInfo(
        files=[f.path for f in files],
        events=sum(f.read.events for f in files),
        truncated=any(f.read.truncated for f in files),
        bytes_read=sum(f.read.bytes_read for f in files),
        bytes_total=sum(f.read.bytes_total or 0 for f in files),
    )
    read.notes.extend(cycle_notes)
    for f in files:
        if f.read.truncated:
            read.notes.append(
                f"{os.path.basename(f.path)} is cut short ({f.read.note or 'the file ends mid-event'}): "
                f"analysed its {f.read.events} complete events"
            )
        bad = f.data.malformed + f.read.skipped
        if bad:
            read.notes.append(f"{os.path.basename(f.path)}: {bad} events could not be read (a field of the "
                              "wrong type or not an object) and were skipped")
        if f.bd.dropped_tail_steps:
            read.notes.append(
                f"{os.path.basename(f.path)}: left out the last {f.bd.dropped_tail_steps} step(s), whose "
                "kernels the profiler did not capture completely"
            )
    run = RunInfo(
        kind="trace", target=path, trace=read,
        collectors={
            "cpu-sampling": CollectorStatus(
                False, "a trace holds no CPU use of the process or its DataLoader workers"),
        },
    )
    gpu = gpu_evidence(main.data, main.bd, main.read.meta)
    ev = Evidence(run=run, steps=_steps(main), loaders=_loaders(main), gpu=gpu)
    if len(files) > 1:  # the ranks of one run: the slowest one's evidence is shown
        ev.ranks = sorted((_rank(f) for f in files), key=lambda r: (r.rank is None, r.rank or 0, r.file))
        ev.shown_rank = main.rank
    return ev


def _rank(f: TraceFile) -> RankEvidence:
    shares: dict[str, Any] = f.bd.shares()
    return RankEvidence(
        rank=f.rank, file=os.path.basename(f.path), steps=len(f.bd.steps), mean_step_s=f.mean_step_s,
        input_share=shares.get("dataloader"), kernel_share=shares.get("kernel"),
    )
