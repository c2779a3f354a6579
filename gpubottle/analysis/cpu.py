"""CPU evidence over the measured window: who used which cores, and how many were left."""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict

from gpubottle.analysis.samples import Samples
from gpubottle.collect.system import CoreBudget
from gpubottle.evidence import CpuEvidence

Span = tuple[float, float]


def in_spans(t: float, spans: list[Span] | None) -> bool:
    """Whether a moment lies in one of the spans (merged, sorted); None: the whole run."""
    if spans is None:
        return True
    i = bisect.bisect_right(spans, (t, float("inf"))) - 1
    return i >= 0 and spans[i][0] <= t <= spans[i][1]


def cpu_evidence(
    samples: Samples,
    main_pid: int,
    workers: set[int],
    budget: CoreBudget,
    spans: list[Span] | None,
    interval: float | None,
    fallback: bool = True,
) -> CpuEvidence:
    """Over the samples taken inside `spans` (the measured steps less evaluation and checkpoints,
    or an evaluation phase's passes). `fallback`: a very short run uses every sample rather than
    none."""
    rows = [r for r in samples.cpu if in_spans(r.t, spans)]
    if len(rows) < 3 and fallback:
        rows = samples.cpu
    ev = CpuEvidence(
        samples=len(rows),
        interval_s=interval,
        cores_logical=budget.logical,
        cores_affinity=budget.affinity,
        cgroup_quota_cores=budget.cgroup_quota,
        cores_available=budget.available,
        ranks_sharing=budget.shared_by,
    )
    if not rows:
        return ev
    main, wsum, other, tree, busy, iow = [], [], [], [], [], []
    per_worker: dict[int, list[float]] = defaultdict(list)
    worker_main = worker_all = 0.0  # the workers' main threads' CPU, and all of theirs, alike sampled
    worker_waits: list[float] = []
    main_thread: list[float] = []
    main_waits: list[float] = []
    for r in rows:
        for pid_s, wait in (r.run_queue or {}).items():
            if int(pid_s) in workers:
                worker_waits.append(float(wait))
            elif int(pid_s) == main_pid:
                main_waits.append(float(wait))
        ran = (r.main_thread or {}).get(str(main_pid))
        if ran is not None:
            main_thread.append(float(ran))
        m = wk = oth = 0.0
        for pid_s, cores in r.cores.items():
            pid = int(pid_s)
            if pid == main_pid:
                m += cores
            elif pid in workers:
                wk += cores
                per_worker[pid].append(cores)
                ran_w = (r.main_thread or {}).get(pid_s)
                if ran_w is not None:
                    worker_main += float(ran_w)
                    worker_all += cores
            else:
                oth += cores
        main.append(m)
        wsum.append(wk)
        other.append(oth)
        tree.append(m + wk + oth)
        if r.busy is not None:
            busy.append(r.busy)
        if r.iowait is not None:
            iow.append(r.iowait)
    ev.main_cores = statistics.fmean(main)
    ev.other_children_cores = statistics.fmean(other)
    ev.tree_cores = statistics.fmean(tree)
    if per_worker:
        ev.workers_seen = len(per_worker)
        ev.workers_cores = statistics.fmean(wsum)
        means = [statistics.fmean(v) for v in per_worker.values() if len(v) >= 2] or [
            statistics.fmean(v) for v in per_worker.values()
        ]
        ev.per_worker_cores = statistics.fmean(means)
        ev.per_worker_max_cores = max(means)
        if worker_all > 0:
            ev.workers_pool_share = round(max(0.0, 1.0 - worker_main / worker_all), 4)
    if worker_waits:
        ev.per_worker_run_queue = statistics.fmean(worker_waits)
    if main_thread:
        ev.main_thread_cores = statistics.fmean(main_thread)
    if main_waits:
        ev.main_run_queue = statistics.fmean(main_waits)
    if busy:
        ev.system_cores = statistics.fmean(busy)
    if iow and budget.logical:
        ev.iowait_fraction = statistics.fmean(iow) / budget.logical
    outside = [r for r in samples.outside if in_spans(r.t, spans)] or samples.outside
    if outside:
        ev.outside_cores = statistics.fmean(r.cores for r in outside)
        top: dict[int, list[float | str]] = {}
        for sample in outside:
            for pid, name, cores in sample.top:
                top.setdefault(int(pid), [name, 0.0, 0])
                top[int(pid)][1] = float(top[int(pid)][1]) + float(cores)
                top[int(pid)][2] = int(top[int(pid)][2]) + 1
        ranked = sorted(
            ({"pid": p, "name": v[0], "cores": round(float(v[1]) / len(outside), 3)} for p, v in top.items()),
            key=lambda d: -float(d["cores"]),
        )
        ev.top_outside = [d for d in ranked if float(d["cores"]) >= 0.1][:3]
    own = [r.cores for r in samples.own if in_spans(r.t, spans)] or [r.cores for r in samples.own]
    helpers = [x.helpers for x in outside]
    if own:
        ev.supervisor_cores = statistics.fmean(own) + (statistics.fmean(helpers) if helpers else 0.0)
    loads = [r.load1 for r in samples.mem if r.load1 is not None and in_spans(r.t, spans)]
    if loads:
        ev.loadavg_1m = max(loads)
    return ev
