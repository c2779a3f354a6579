"""cpu-contention: other programs, or more threads than cores, take the CPU the run needs."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import CpuEvidence, Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import enough_steps, main_loader
from gpubottle.units import cores


def cpu_contention(ev: Evidence) -> list[Finding]:
    c = ev.cpu
    w = ev.measured()
    if c is None or c.cores_available is None or w is None or not enough_steps(ev, w):
        return []
    avail = c.cores_available
    facts: list[Fact] = []
    fixes: list[Fix] = []
    outside = c.outside_cores or 0.0
    tree = c.tree_cores or 0.0
    unattributed = False
    if outside >= th.OUTSIDE_CORES_WARNING and tree + outside >= avail - th.SPARE_CORES_MIN:
        if named_outside(c) >= th.OUTSIDE_NAMED_SHARE * outside:
            names = ", ".join(f"{p['name']} (pid {p['pid']}, {cores(float(p['cores']))} cores)"
                              for p in c.top_outside)
            facts.append(Fact(
                f"processes outside this run use {cores(outside)} of {cores(avail)} cores: {names}",
                "outside_cores", round(outside, 3),
            ))
            fixes.append(Fix(text=f"stop or move the competing work ({names}), or pin it to other cores"))
        else:
            # CPU the run's own accounting misses (workers that ended between samples, the kernel's
            # work for the run: page zeroing, interrupts) or short-lived programs no scan caught:
            # said, never blamed on "other programs".
            unattributed = True
            facts.append(Fact(
                f"{cores(outside)} cores were busy outside the run's processes, named by no process "
                "(short-lived processes, the kernel's work for the run, processes that ended between "
                "samples): unattributed", "unattributed_cores", round(outside, 3)))
    if c.torch_threads and c.torch_threads >= th.THREADS_OVER_CORES * avail and avail >= 1:
        target = max(1, int(avail))
        if c.threads_site:
            origin = f"the script sets it at {c.threads_site}"
        elif env := {k: val for k, val in c.thread_env.items() if val.strip().isdigit()}:
            origin = "from " + ", ".join(f"{k}={val}" for k, val in env.items())
        else:
            origin = "torch's default (it counts the machine's cores, not the container's limit)"
        facts.append(Fact(
            f"torch computes with {c.torch_threads} threads ({origin}) but only {cores(avail)} cores "
            f"are available (affinity {c.cores_affinity}, cgroup quota {c.cgroup_quota_cores or 'none'}): "
            "threads beyond the cores wait for each other at every parallel op",
            "torch_threads", float(c.torch_threads),
        ))
        if c.threads_site:
            text = f"use as many threads as cores: torch.set_num_threads({target})"
        elif c.thread_env:
            text = (f"use as many threads as cores: set {' and '.join(sorted(c.thread_env))}={target} "
                    f"where the job is launched (or call torch.set_num_threads({target}) first thing)")
        else:
            text = (f"use as many threads as cores: torch.set_num_threads({target}) at the start of the "
                    f"script, or OMP_NUM_THREADS={target} where the job is launched")
        fixes.append(Fix(text=text, where=c.threads_site,
                         change={"torch.set_num_threads": [c.torch_threads, target]}))
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
            text=f"{lo.num_workers} workers that each compute share {cores(avail)} cores: fewer may "
            "make batches as fast with less switching and memory; try it and compare",
            where=lo.site,
            change={"num_workers": [lo.num_workers, max(1, int(avail))]},
        ))
    if not facts:
        return []
    causes = {"outside_cores": "other programs use the cores", "torch_threads": "more torch threads "
              "than cores", "num_workers": "more busy DataLoader workers than cores",
              "unattributed_cores": "CPU busy outside the run's processes, by no named process"}
    summary = "the run competes for CPU: " + "; ".join(causes.get(f.name or "", f.text) for f in facts)
    severity = "info" if unattributed and len(facts) == 1 else "warning"
    return [Finding(v.CPU_CONTENTION, severity, None, summary, facts, fixes)]


def named_outside(c: CpuEvidence) -> float:
    """Cores the processes named outside the run used (the scan's top ones)."""
    return sum(float(p.get("cores") or 0.0) for p in c.top_outside)
