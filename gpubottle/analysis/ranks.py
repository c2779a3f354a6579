"""A multi-process job's evidence: every rank analysed on its own, a row of numbers per rank.

Each rank is analysed exactly like a single process (its events, its processes' samples, its
DataLoader workers, its share of the machine's cores). Which rank the job's report shows, and each
rank's verdict, are the rules' to say (rules/jobs.py); `job_evidence` then assembles the shown
rank's evidence with every rank's row beside it. Run directories of the nodes of one job merge the
same way (`gpubottle report DIR1 DIR2`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from gpubottle.analysis.build import RankPart, build_evidence
from gpubottle.analysis.samples import Samples, read_samples
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.evidence import Evidence, RankEvidence, RunInfo
from gpubottle.rundir import RunDir

Part = tuple[Evidence, RankEvidence]


@dataclass
class RunParts:
    """What a run directory holds: the script's own evidence (the launcher's, for a job), and the
    ranks' when the script launched ranks."""

    own: Evidence
    ranks: list[Part] = field(default_factory=list)


def rank_row(ev: Evidence, events: ChildEvents, rank: int, path: str) -> RankEvidence:
    """The numbers the job table and the pace rule read, from one rank's evidence."""
    m = ev.measured()
    busy = None
    c = ev.cpu
    if m is not None and c is not None and c.main_thread_cores is not None and m.total_s > 0:
        busy = max(0.0, min(1.0, c.main_thread_cores) - (m.wait_cpu_s or 0.0) / m.total_s)
    info = events.rank
    return RankEvidence(
        rank=rank, file=path, steps=len(ev.steps.durations_s),
        mean_step_s=m.mean_step_s if m is not None else None,
        input_share=m.input_share if m is not None else None,  # null without a DataLoader
        kernel_share=ev.gpu.kernel_share if ev.gpu else None,
        node=str(info.node) if info else None,
        local_rank=int(info.local_rank) if info and info.local_rank is not None else None,
        pid=int(events.start.pid) if events.start else None,
        launcher=str(info.launcher) if info else None,
        job=str(info.job) if info and info.job else None,
        world_size=int(info.world_size) if info and info.world_size is not None else None,
        outside_cores=c.outside_cores if c else None,
        busy_share=round(busy, 4) if busy is not None else None,
        communication_share=ev.gpu.communication_share if ev.gpu and ev.gpu.uses_gpu else None,
        communication_overlap=ev.gpu.communication_overlap if ev.gpu and ev.gpu.uses_gpu else None,
        main_cores=c.main_cores if c else None,
        # Its DataLoader's own word on its workers, or the workers the sampler saw below it.
        workers=max(c.workers_seen if c else 0, len(events.worker_pids())),
        workers_cores=c.workers_cores if c else None,
        worker_run_queue=c.per_worker_run_queue if c else None,
        memory_bytes=ev.memory.peak_tree_bytes if ev.memory else None,
        status=ev.run.stop_reason, exit_code=ev.run.exit_code, exception=ev.run.exception,
        ended_at=float(events.end.t) if events.end else None,
    )


def rank_parts(rd: RunDir, samples: Samples | None = None) -> list[Part]:
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
        out.append((evidence, rank_row(evidence, ev, r, os.path.basename(rd.rank_events(r)))))
        try:
            rd.write_json(rd.rank_evidence(r), evidence.to_json())
        except OSError:
            pass
    return out


def saved_parts(rd: RunDir) -> list[Part]:
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
        out.append((evidence, rank_row(evidence, events, r, os.path.basename(rd.rank_events(r)))))
    return out


def job_evidence(parts: list[Part], shown: int, job: RunInfo | None) -> Evidence:
    """One evidence for the job: the shown rank's (parts[shown]), every rank's row beside it, and
    the job's own run facts (its command, exit status, collectors) where there are some."""
    lead, row = parts[shown]
    ev = dataclasses.replace(lead)
    run = dataclasses.replace(lead.run, collectors=dict(lead.run.collectors))
    if job is not None:
        run.command, run.target, run.cwd, run.run_dir = job.command, job.target, job.cwd, job.run_dir
        run.started_at, run.duration_s = job.started_at, job.duration_s
        run.exit_code, run.signal, run.stop_reason = job.exit_code, job.signal, job.stop_reason
        run.collectors.update({k: s for k, s in job.collectors.items() if not k.startswith("torch")})
    failed = [r for _, r in parts if r.exception or r.exit_code not in (0, None)]
    if failed:
        f = min(failed, key=lambda r: r.ended_at if r.ended_at is not None else float("inf"))
        run.exception = f"{f.name}: {f.exception or f'exit status {f.exit_code}'}"
        if job is not None and job.stop_reason in ("completed", None):
            run.stop_reason = "failed"
    ev.run = run
    ev.ranks = sorted((r for _, r in parts), key=lambda r: (r.node or "", r.rank or 0))
    ev.shown_rank = row.rank
    return ev


def single_rank_part(rd: RunDir) -> Part | None:
    """A run directory that is one rank of a job (a `gpubottle run` a cluster's launcher started,
    launch/job.py): its own evidence is that rank's. None for a run of its own."""
    events = read_events(rd.events)
    if events.rank is None:
        return None
    try:
        with open(rd.evidence) as fh:
            evidence = Evidence.from_json(json.load(fh))
    except (OSError, ValueError, KeyError, TypeError):  # it ended before its evidence was written
        evidence = build_evidence(rd, events)
    return evidence, rank_row(evidence, events, int(events.rank.rank), os.path.basename(rd.events))


def job_dirs(folder: str) -> list[str]:
    """The run directories directly inside a job folder (rank0, rank1, node0, ...), in rank order."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [os.path.join(folder, n) for n in names
             if os.path.isdir(os.path.join(folder, n)) and RunDir(os.path.join(folder, n)).is_run()]
    return sorted(found, key=lambda p: [int(t) if t.isdigit() else t
                                        for t in re.split(r"(\d+)", os.path.basename(p))])


def merge_dirs(paths: list[str]) -> list[Part]:
    """The ranks of one job from the run directories of its nodes or of its ranks (each a
    `gpubottle run` of one rank); refused when they are not one job's."""
    parts: list[Part] = []
    seen: dict[tuple[str | None, int | None], str] = {}
    for path in paths:
        rd = RunDir(path)
        if not os.path.isdir(path) or not rd.is_run():
            raise GpubottleError(f"{path} is not a run directory of `gpubottle run`", EXIT_BAD_INPUT)
        found = saved_parts(rd)
        if not found:
            one = single_rank_part(rd)
            if one is None:
                raise GpubottleError(f"{path} holds no ranks (a single-process run cannot be merged)",
                                     EXIT_BAD_INPUT)
            found = [one]
        for evidence, row in found:
            key = (row.node, row.rank)
            if key in seen or (row.job is not None and any(r.rank == row.rank and r.job == row.job
                                                             for _, r in parts)):
                raise GpubottleError(
                    f"rank {row.rank} of {row.node} is in both {seen.get(key, 'another directory')} and "
                    f"{path}: are they runs of the same job?", EXIT_BAD_INPUT)
            seen[key] = path
            row.file = os.path.join(path, row.file)
            parts.append((evidence, row))
    jobs = sorted({r.job for _, r in parts if r.job is not None})
    if len(jobs) > 1:
        raise GpubottleError(f"these run directories hold ranks of {len(jobs)} different jobs "
                             f"({', '.join(jobs)}): merge one job's at a time", EXIT_BAD_INPUT)
    worlds = sorted({r.world_size for _, r in parts if r.job is not None and r.world_size})
    if len(worlds) > 1:
        raise GpubottleError(f"these ranks were told different world sizes ({', '.join(map(str, worlds))}): "
                             "runs of different jobs under one id; remove the earlier job's directories",
                             EXIT_BAD_INPUT)
    return parts


def missing_ranks(parts: list[Part]) -> list[int]:
    """Ranks the job had (by the world size its ranks were told) that no directory holds."""
    worlds = [r.world_size for _, r in parts if r.world_size]
    if not worlds:
        return []
    have = {r.rank for _, r in parts}
    return [r for r in range(max(worlds)) if r not in have]


def run_parts(rd: RunDir, events: ChildEvents | None = None) -> RunParts:
    """The evidence of a run directory: its script's, and its ranks' when ranks reported."""
    samples = read_samples(rd.samples)
    own = build_evidence(rd, events, samples=samples)
    return RunParts(own, rank_parts(rd, samples))
