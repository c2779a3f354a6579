"""Whether other programs (named, or CPU no process explains), more torch threads than cores, or more
busy DataLoader workers than cores take the CPU the run needs, and where each setting comes from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.evidence import CpuEvidence, Evidence
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import enough_steps, main_loader


def named_outside(c: CpuEvidence) -> float:
    """Cores the processes named outside the run used (the scan's top ones)."""
    return sum(float(p.get("cores") or 0.0) for p in c.top_outside)


@dataclass
class Outside:
    cores: float  # busy outside the run's processes
    named: list[dict[str, Any]]  # the processes that explain it; empty: unattributed


@dataclass
class Threads:
    threads: int  # torch's intra-op threads
    target: int  # as many as cores
    site: str | None  # where the script sets them
    env: dict[str, str] = field(default_factory=dict)  # thread variables with a number in them
    env_names: list[str] = field(default_factory=list)  # every thread variable set (sorted)
    affinity: int | None = None
    quota: float | None = None
    left: float | None = None  # the cores other programs leave the run, when they set the target


@dataclass
class Own:
    """Processes the script started for itself beside its DataLoader workers (a logger's uploader,
    a metrics service), busy while the training runs."""

    cores: float
    function: str | None  # where their samples are busiest, when py-spy sampled them
    site: str | None


@dataclass
class Contention:
    available: float  # cores the run may use
    outside: Outside | None = None
    threads: Threads | None = None
    workers: int | None = None  # busy DataLoader workers beyond the cores
    workers_site: str | None = None
    own: Own | None = None

    @property
    def unattributed_only(self) -> bool:
        return (self.outside is not None and not self.outside.named and self.threads is None
                and self.workers is None and self.own is None)


def decide_contention(ev: Evidence) -> Contention | None:
    c = ev.cpu
    w = ev.measured()
    if c is None or c.cores_available is None or w is None or not enough_steps(ev, w):
        return None
    avail = c.cores_available
    d = Contention(avail)
    outside = c.outside_cores or 0.0
    if outside >= th.OUTSIDE_CORES_WARNING and (c.tree_cores or 0.0) + outside >= avail - th.SPARE_CORES_MIN:
        # CPU the run's own accounting misses (workers that ended between samples, the kernel's
        # work for the run: page zeroing, interrupts) or short-lived programs no scan caught is
        # said, never blamed on "other programs".
        named = named_outside(c) >= th.OUTSIDE_NAMED_SHARE * outside
        d.outside = Outside(outside, list(c.top_outside) if named else [])
    # Other programs holding cores leave the run fewer: torch's threads then wait for each other at
    # every parallel op, spinning while those programs hold the cores (docs/thresholds.md).
    left = avail - named_outside(c) if d.outside is not None and d.outside.named else None
    target = max(1, int((avail if left is None else left) + 0.5))
    if c.torch_threads and c.torch_threads >= th.THREADS_OVER_CORES * target and avail >= 1:
        d.threads = Threads(c.torch_threads, target, c.threads_site,
                            {k: x for k, x in c.thread_env.items() if x.strip().isdigit()},
                            sorted(c.thread_env), c.cores_affinity, c.cgroup_quota_cores,
                            left if left is not None and target < int(avail) else None)
    lo = main_loader(ev)
    # Many workers that mostly wait on I/O are fine; many that each want a core are not.
    busy_workers = (c.per_worker_cores or 0.0) * (lo.num_workers or 0) if lo is not None else 0.0
    if (lo is not None and lo.num_workers and lo.num_workers > th.WORKERS_OVER_CORES * avail
            and busy_workers > avail - th.SPARE_CORES_MIN):
        d.workers, d.workers_site = lo.num_workers, lo.site
    d.own = _own_processes(ev, avail)
    if d.outside is None and d.threads is None and d.workers is None and d.own is None:
        return None
    return d


def _own_processes(ev: Evidence, avail: float) -> Own | None:
    """The script's other processes holding cores the training needs. Not where the loop waits for
    them (producers: they are its input, input_pipeline's to say)."""
    c, st = ev.cpu, ev.stacks
    if c is None or (st is not None and st.main_wait_share):
        return None
    own = c.other_children_cores or 0.0
    if own < th.OUTSIDE_CORES_WARNING or (c.tree_cores or 0.0) + (c.outside_cores or 0.0) < (
            avail - th.SPARE_CORES_MIN):
        return None
    return Own(own, st.producer_hot if st else None, st.producer_hot_site if st else None)
