"""A multi-process job's evidence: every rank diagnosed on its own, then one job report.

Each rank is analysed exactly like a single process (its events, its processes' samples, its
DataLoader workers, its share of the machine's cores); a row per rank keeps the numbers the job
table shows. The job's evidence is then the evidence of the rank that sets the pace (the one the
others wait for), or of the first rank that failed, or of the lowest rank, with every row beside it.
Run directories of the nodes of one job merge the same way (`gpubottle report DIR1 DIR2`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from dataclasses import dataclass

from gpubottle.analysis.build import build_evidence
from gpubottle.analysis.samples import Samples, read_samples
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.evidence import Evidence, RankEvidence, RunInfo
from gpubottle.report import Report
from gpubottle.rules import diagnose
from gpubottle.rules.ranks import failed_first, pace_setter
from gpubottle.rundir import RunDir


@dataclass
class RankPart:
    """What build_evidence needs to analyse one rank of a run directory."""

    rank: int
    on_node: int  # ranks of the job on the same machine (they share its cores)


def rank_row(ev: Evidence, events: ChildEvents, rank: int, report: Report, path: str) -> RankEvidence:
    """The numbers the job table and the pace rule read, from one rank's diagnosed evidence."""
    st = report.step_summary
    idx = ev.steps.measured()
    total = sum(ev.steps.durations_s[i] for i in idx)
    busy = None
    c = ev.cpu
    if c is not None and c.main_thread_cores is not None and total > 0:
        waited_cpu = sum(ev.steps.input_wait_cpu_s[i] or 0.0 for i in idx
                         if i < len(ev.steps.input_wait_cpu_s))
        busy = max(0.0, min(1.0, c.main_thread_cores) - waited_cpu / total)
    input_share = st.input_wait_share
    if input_share is None and idx and ev.steps.input_wait_s and total > 0:
        input_share = sum(ev.steps.input_wait_s[i] for i in idx) / total
    head = report.findings[0] if report.findings else None
    info = events.rank
    return RankEvidence(
        rank=rank, file=path, steps=st.count, mean_step_s=st.mean_s, input_share=input_share,
        kernel_share=ev.gpu.kernel_share if ev.gpu else None,
        node=str(info.node) if info else None,
        local_rank=int(info.local_rank) if info and info.local_rank is not None else None,
        pid=int(events.start.pid) if events.start else None,
        launcher=str(info.launcher) if info else None,
        busy_share=round(busy, 4) if busy is not None else None,
        communication_share=ev.gpu.communication_share if ev.gpu and ev.gpu.uses_gpu else None,
        communication_overlap=ev.gpu.communication_overlap if ev.gpu and ev.gpu.uses_gpu else None,
        main_cores=c.main_cores if c else None,
        # Its DataLoader's own word on its workers, or the workers the sampler saw below it.
        workers=max(c.workers_seen if c else 0, len(events.worker_pids())),
        workers_cores=c.workers_cores if c else None,
        worker_run_queue=c.per_worker_run_queue if c else None,
        memory_bytes=ev.memory.peak_tree_bytes if ev.memory else None,
        verdict=report.primary,
        why=head.summary if head is not None and head.category == report.primary else None,
        status=ev.run.stop_reason, exit_code=ev.run.exit_code, exception=ev.run.exception,
        ended_at=float(events.end.t) if events.end else None,
    )


def rank_parts(rd: RunDir, samples: Samples | None = None) -> list[tuple[Evidence, RankEvidence]]:
    """Every rank that wrote events into the run directory, analysed (evidence saved per rank).
    `samples`: the run's whole tree, when already read (each rank keeps its own processes')."""
    ranks = rd.ranks()
    if not ranks:
        return []
    if samples is None:
        samples = read_samples(rd.samples)
    events = {r: read_events(rd.rank_events(r)) for r in ranks}
    nodes = Counter(e.rank.node if e.rank else None for e in events.values())
    out = []
    for r in ranks:
        ev = events[r]
        node = ev.rank.node if ev.rank else None
        evidence = build_evidence(rd, ev, RankPart(r, nodes[node]), samples)
        report = diagnose(evidence)
        out.append((evidence, rank_row(evidence, ev, r, report, os.path.basename(rd.rank_events(r)))))
        try:
            rd.write_json(rd.rank_evidence(r), evidence.to_json())
        except OSError:
            pass
    return out


def saved_parts(rd: RunDir) -> list[tuple[Evidence, RankEvidence]]:
    """The ranks of a finished run directory, from their saved evidence (else rebuilt)."""
    saved = []
    for r in rd.ranks():
        try:
            with open(rd.rank_evidence(r)) as fh:
                saved.append(Evidence.from_json(json.load(fh)))
        except (OSError, ValueError, KeyError, TypeError):
            return rank_parts(rd)
    out = []
    for r, evidence in zip(rd.ranks(), saved):
        events = read_events(rd.rank_events(r))
        row = rank_row(evidence, events, r, diagnose(evidence), os.path.basename(rd.rank_events(r)))
        out.append((evidence, row))
    return out


def _lead(parts: list[tuple[Evidence, RankEvidence]]) -> tuple[Evidence, RankEvidence]:
    """The rank whose evidence speaks for the job: the first that failed (its OOM, its exception),
    else the pace-setter, else the lowest rank that took steps."""
    rows = [row for _, row in parts]
    failed = failed_first(rows)
    if failed:
        return next(p for p in parts if p[1] is failed[0])
    found = pace_setter(rows)
    if found is not None:
        return next(p for p in parts if p[1] is found[0])
    stepping = [p for p in parts if p[1].steps]
    return (stepping or parts)[0]


def job_evidence(parts: list[tuple[Evidence, RankEvidence]], job: RunInfo | None) -> Evidence:
    """One evidence for the job: the leading rank's, every rank's row beside it, and the job's
    own run facts (its command, exit status, collectors) where there are some."""
    lead, row = _lead(parts)
    ev = dataclasses.replace(lead)
    run = dataclasses.replace(lead.run, collectors=dict(lead.run.collectors))
    if job is not None:
        run.command, run.target, run.cwd, run.run_dir = job.command, job.target, job.cwd, job.run_dir
        run.started_at, run.duration_s = job.started_at, job.duration_s
        run.exit_code, run.signal, run.stop_reason = job.exit_code, job.signal, job.stop_reason
        run.collectors.update({k: s for k, s in job.collectors.items() if not k.startswith("torch")})
    failed = failed_first([r for _, r in parts])
    if failed:
        f = failed[0]
        run.exception = f"{f.name}: {f.exception or f'exit status {f.exit_code}'}"
        if job is not None and job.stop_reason in ("completed", None):
            run.stop_reason = "failed"
    ev.run = run
    ev.ranks = sorted((r for _, r in parts), key=lambda r: (r.node or "", r.rank or 0))
    ev.pace_rank = row.rank
    return ev


def merge_dirs(paths: list[str]) -> Evidence:
    """One job from the run directories of its nodes (or of separate runs of one job's ranks)."""
    parts: list[tuple[Evidence, RankEvidence]] = []
    seen: dict[tuple[str | None, int | None], str] = {}
    for path in paths:
        rd = RunDir(path)
        if not os.path.isdir(path) or not rd.is_run():
            raise GpubottleError(f"{path} is not a run directory of `gpubottle run`", EXIT_BAD_INPUT)
        found = saved_parts(rd)
        if not found:
            raise GpubottleError(f"{path} holds no ranks (a single-process run cannot be merged)",
                                 EXIT_BAD_INPUT)
        for evidence, row in found:
            key = (row.node, row.rank)
            if key in seen:
                raise GpubottleError(
                    f"rank {row.rank} of {row.node} is in both {seen[key]} and {path}: "
                    "are they runs of the same job?", EXIT_BAD_INPUT)
            seen[key] = path
            row.file = os.path.join(path, row.file)
            parts.append((evidence, row))
    ev = job_evidence(parts, None)
    ev.run.run_dir = ", ".join(paths)
    ev.run.duration_s = max((e.run.duration_s or 0.0 for e, _ in parts), default=None) or None
    return ev


def run_evidence(rd: RunDir, events: ChildEvents | None = None) -> Evidence:
    """The evidence of a run directory: its script's, or the job's when ranks reported."""
    samples = read_samples(rd.samples)
    own = build_evidence(rd, events, samples=samples)
    parts = rank_parts(rd, samples)
    return job_evidence(parts, own.run) if parts else own
