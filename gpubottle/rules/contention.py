"""cpu-contention: other programs, or more threads than cores, take the CPU the run needs."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import cores, enough_steps, main_loader, window


def cpu_contention(ev: Evidence) -> list[Finding]:
    c = ev.cpu
    w = window(ev)
    if c is None or c.cores_available is None or w is None or not enough_steps(ev, w):
        return []
    avail = c.cores_available
    facts: list[Fact] = []
    fixes: list[Fix] = []
    outside = c.outside_cores or 0.0
    tree = c.tree_cores or 0.0
    if outside >= th.OUTSIDE_CORES_WARNING and tree + outside >= avail - th.SPARE_CORES_MIN:
        names = ", ".join(f"{p['name']} (pid {p['pid']}, {cores(float(p['cores']))} cores)"
                          for p in c.top_outside) or "several processes"
        facts.append(Fact(
            f"processes outside this run use {cores(outside)} of {cores(avail)} cores: {names}",
            "outside_cores", round(outside, 3),
        ))
        fixes.append(Fix(text=f"stop or move the competing work ({names}), or pin it to other cores"))
    if c.torch_threads and c.torch_threads >= th.THREADS_OVER_CORES * avail and avail >= 1:
        facts.append(Fact(
            f"torch computes with {c.torch_threads} threads but only {cores(avail)} cores are available "
            f"(affinity {c.cores_affinity}, cgroup quota {c.cgroup_quota_cores or 'none'})",
            "torch_threads", float(c.torch_threads),
        ))
        fixes.append(Fix(
            text="match torch's threads to the cores this run may use (or set OMP_NUM_THREADS)",
            change={"torch.set_num_threads": [c.torch_threads, max(1, int(avail))]},
        ))
    lo = main_loader(ev)
    # Many workers that mostly wait on I/O are fine; many that each want a core are not.
    busy_workers = (c.per_worker_cores or 0.0) * (lo.num_workers or 0) if lo is not None else 0.0
    if (lo is not None and lo.num_workers and lo.num_workers > th.WORKERS_OVER_CORES * avail
            and busy_workers > avail - th.SPARE_CORES_MIN):
        facts.append(Fact(
            f"{lo.num_workers} DataLoader workers share {cores(avail)} cores",
            "num_workers", float(lo.num_workers),
        ))
        fixes.append(Fix(
            text="more workers than cores only adds switching and memory",
            where=lo.site,
            change={"num_workers": [lo.num_workers, max(1, int(avail))]},
        ))
    if not facts:
        return []
    summary = "the run competes for CPU: " + "; ".join(f.text.split(":")[0] for f in facts)
    return [Finding(v.CPU_CONTENTION, "warning", None, summary, facts, fixes)]
