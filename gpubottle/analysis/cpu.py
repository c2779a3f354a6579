"""CPU evidence over the measured window: who used which cores, and how many were left."""

from __future__ import annotations

import statistics
from collections import defaultdict

from gpubottle.analysis.samples import Samples
from gpubottle.collect.system import CoreBudget
from gpubottle.evidence import CpuEvidence


def _in_window(t: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or t >= lo) and (hi is None or t <= hi)


def cpu_evidence(
    samples: Samples,
    main_pid: int,
    workers: set[int],
    budget: CoreBudget,
    window: tuple[float | None, float | None],
    interval: float | None,
) -> CpuEvidence:
    lo, hi = window
    rows = [r for r in samples.cpu if _in_window(r.t, lo, hi)]
    if len(rows) < 3:  # a very short run: use every sample rather than none
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
    outside = [r for r in samples.outside if _in_window(r.t, lo, hi)] or samples.outside
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
    own = [r.cores for r in samples.own if _in_window(r.t, lo, hi)] or [r.cores for r in samples.own]
    helpers = [x.helpers for x in outside]
    if own:
        ev.supervisor_cores = statistics.fmean(own) + (statistics.fmean(helpers) if helpers else 0.0)
    loads = [r.load1 for r in samples.mem if r.load1 is not None and _in_window(r.t, lo, hi)]
    if loads:
        ev.loadavg_1m = max(loads)
    return ev
