"""Whether the run is at risk of running out of host memory, why (in order: it died of it, it sits
near the limit, it grows toward it, its workers copy the dataset), when it would run out, and which
settings a fix may change."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, GraphGrowth, HeapGrowth, KeptGrowth, LeakEvidence, MemoryEvidence
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.rules.memory.buffers import Bounded, bounded
from gpubottle.rules.memory.workers import CopyOnRead, copy_on_read

# Why the run is at risk, as the decision lists them (the words say each one).
MEMORY_ERROR = "memory-error"  # the script raised MemoryError
OOM_KILLED = "oom-killed"  # SIGKILL with memory nearly full: the kernel's OOM killer
NEAR_LIMIT = "near-limit"  # memory in use reached MEM_WARNING of the limit
GROWS_CRITICAL = "grows-critical"  # steady growth that runs out within EXHAUSTION_CRITICAL_S
GROWS_WARNING = "grows-warning"  # ... within EXHAUSTION_WARNING_S
WORKER_COPIES = "worker-copies"  # workers copying the dataset (copy-on-read or spawned copies)


@dataclass
class Growth:
    """Steady growth of the run's memory (a straight line that fits)."""

    bytes_per_s: float
    r2: float
    exhaustion_s: float | None  # projected seconds until memory runs out
    min_available_bytes: int | None


@dataclass
class HostMemory:
    severity: str
    causes: list[str] = field(default_factory=list)  # the constants above, the gravest first
    used: float | None = None  # peak share of the limit in use
    limit_bytes: int = 0
    limit_source: str | None = None
    peak_tree_bytes: int | None = None
    growth: Growth | None = None
    copies: CopyOnRead | None = None  # workers holding copies of the dataset
    leak: LeakEvidence | None = None  # what the tensor census saw pile up, when worth naming
    fewer_workers: tuple[int, int] | None = None  # num_workers from -> to (each holds its own memory)
    per_worker_bytes: float | None = None
    smaller_batch: tuple[int, int] | None = None  # batch_size from -> to
    loader_site: str | None = None
    # Most of the growth is memory glibc's malloc keeps free after the script freed it (its heap
    # fragmented)
    fragmented: HeapGrowth | None = None
    buffer: Bounded | None = None  # a bounded buffer still filling, full only after memory runs out
    unexplained: bool = False  # the growth's cause was not seen (unexplained_growth)
    kept: KeptGrowth | None = None  # the script's list or dict that holds the growth (kept_store)
    graph: GraphGrowth | None = None  # a tensor that keeps every step's autograd graph (graph_kept)

    @property
    def grows(self) -> bool:
        return GROWS_CRITICAL in self.causes or GROWS_WARNING in self.causes

    @property
    def exhaustion_s(self) -> float | None:
        known = [x for x in (self.growth.exhaustion_s if self.growth else None,
                             self.copies.exhaustion_s if self.copies else None) if x is not None]
        return min(known) if known else None


def named_leak(leak: LeakEvidence | None) -> LeakEvidence | None:
    """The tensor census's answer, when memory climbed and it is worth naming: not a group that
    barely grew (the loop's current batch caught in one census and not the other: a few tensors,
    little memory)."""
    if leak is None or leak.grown_count < 2 or (
            leak.grown_count < th.LEAK_MIN_COUNT and leak.grown_bytes < th.LEAK_MIN_BYTES):
        return None
    return leak


def fork_copies(ev: Evidence) -> bool:
    """The rise is what forked DataLoader workers' pages cost once they are written: each page the
    main process held when they forked is copied the first time either side writes it (the workers
    keep the original), so the run's memory climbs after they start by up to what the main process
    held then, and stops. A rise no larger than that, over samples the forked workers ran beside,
    is that bounded climb, not growth to project (measured: 8 forked workers beside a busy machine,
    the tree's memory rose 113 MB over 7 s, steadily, from a main process of 299 MB)."""
    m = ev.memory
    if m is None or not m.growth_with_workers or not m.main_before_workers_bytes:
        return False
    forked = any(lo.num_workers and lo.start_method in (None, "fork") for lo in ev.loaders)
    rise = (m.growth_bytes_per_s or 0.0) * (m.growth_span_s or 0.0)
    return forked and rise <= m.main_before_workers_bytes


def _levelled(g: float, span: float, m: MemoryEvidence) -> bool:
    """The rise stopped before the run did: flat over the last third of the span it was fitted
    over, that third long enough to tell (a replay buffer trimmed at 60,000 entries: 263 -> 371 MB
    over 6 s, then 371 MB for the last 3.5 s; projected to run out in 40 min, critical)."""
    tail = m.growth_tail_bytes_per_s
    return tail is not None and span / 3 >= th.GROWTH_TAIL_MIN_S and tail < th.GROWTH_TAIL_SHARE * g


def _growth(ev: Evidence) -> Growth | None:
    m = ev.memory
    assert m is not None
    g = m.growth_bytes_per_s
    # The rise measured: the fitted line over its own samples (a saved run from before they were
    # recorded: over all of them).
    span = m.growth_span_s if m.growth_span_s is not None else (
        m.series[-1][0] - m.series[0][0] if m.series else 0.0)
    if (g is None or m.growth_r2 is None or g < th.GROWTH_MIN_BYTES_PER_S
            or m.growth_r2 < th.GROWTH_MIN_R2 or len(m.series) < th.GROWTH_MIN_SAMPLES
            or g * span < th.GROWTH_MIN_TOTAL_BYTES or fork_copies(ev) or _levelled(g, span, m)):
        return None
    return Growth(g, m.growth_r2, m.projected_exhaustion_s, m.min_available_bytes)


def fragmented(ev: Evidence, growth: Growth | None) -> HeapGrowth | None:
    """malloc's account, where most of the run's growth between the censuses (its fitted rate
    over their interval) is memory it holds free."""
    h = ev.memory.heap if ev.memory is not None else None
    if h is None or growth is None or h.seconds <= 0:
        return None
    rise = growth.bytes_per_s * h.seconds
    if h.free_grown_bytes < max(th.HEAP_FREE_MIN_BYTES, th.HEAP_FREE_MIN_SHARE * rise):
        return None
    return h


def _graver(a: str | None, b: str | None) -> str | None:
    return max((x for x in (a, b) if x), key=lambda x: v.SEVERITY_RANK[x], default=None)


def decide_host_memory(ev: Evidence) -> HostMemory | None:
    m = ev.memory
    if m is None or not m.samples or not m.limit_bytes:
        return None
    run = ev.run
    killed = run.signal == signal.SIGKILL or run.exit_code in (-9, 137)
    mem_error = bool(run.exception and run.exception.startswith("MemoryError"))
    used = m.peak_used_fraction
    near = used is not None and used >= th.MEM_WARNING
    causes: list[str] = []
    severity: str | None = None
    if near:
        assert used is not None
        severity = "critical" if used >= th.MEM_CRITICAL else "warning"
        causes.append(NEAR_LIMIT)
    if mem_error or (killed and near):
        severity = "critical"
        causes.insert(0, MEMORY_ERROR if mem_error else OOM_KILLED)
    copies = copy_on_read(ev)
    growth = buffer = None
    unexplained = False
    if copies is not None:  # the workers copying the dataset: growth with a bound, not a straight line
        causes.append(WORKER_COPIES)
        severity = _graver(severity, copies.severity)
    else:
        growth, buffer = _bounded_growth(ev)
        if buffer is not None and buffer.fits:
            growth = None  # it levels off below the limit once the buffer is full (a note says so)
        eta = growth.exhaustion_s if growth is not None else None
        unexplained = growth is not None and unexplained_growth(ev, growth)
        if eta is not None and eta <= th.EXHAUSTION_CRITICAL_S:
            # A line projected far past the seconds it was fitted on, with nothing that would go
            # on growing seen in two looks, is a warning: growth that levels off looks the same.
            far = eta > th.GROWTH_UNEXPLAINED_HORIZON * _span(ev) and m.censuses >= 2
            severity = _graver(severity, "warning" if unexplained and far else "critical")
            causes.append(GROWS_CRITICAL)
        elif eta is not None and eta <= th.EXHAUSTION_WARNING_S:
            severity = severity or "warning"
            causes.append(GROWS_WARNING)
    if severity is None:
        return None
    d = HostMemory(severity, causes, used, m.limit_bytes, m.limit_source, m.peak_tree_bytes, growth,
                   copies, named_leak(m.leak) if copies is None else None)
    lo = main_loader(ev)
    if lo is not None:
        d.loader_site = lo.site
        if copies is None and m.peak_workers_bytes and lo.num_workers and near:
            d.fewer_workers = (lo.num_workers, max(1, lo.num_workers // 2))
            d.per_worker_bytes = m.peak_workers_bytes / lo.num_workers
        if near and lo.batch_size and lo.batch_size > 1:
            d.smaller_batch = (lo.batch_size, max(1, lo.batch_size // 2))
    d.fragmented = fragmented(ev, growth) if d.grows else None
    d.buffer = buffer if d.grows else None
    d.kept = kept_store(ev, growth) if d.grows else None
    d.graph = graph_kept(ev) if d.grows else None
    d.unexplained = unexplained and d.grows
    return d


def _span(ev: Evidence) -> float:
    m = ev.memory
    assert m is not None
    if m.growth_span_s is not None:
        return m.growth_span_s
    return m.series[-1][0] - m.series[0][0] if m.series else 0.0


def unexplained_growth(ev: Evidence, growth: Growth) -> bool:
    """Nothing the censuses saw explains the growth: no tensors piling up, no list or dict of the
    script's filling, no bounded buffer filling, malloc's heap not keeping it free."""
    m = ev.memory
    return (m is not None and named_leak(m.leak) is None and not m.buffers
            and fragmented(ev, growth) is None and kept_store(ev, growth) is None
            and graph_kept(ev) is None)


def graph_kept(ev: Evidence) -> GraphGrowth | None:
    """A tensor the script holds whose autograd graph is one graph across the steps between the
    censuses (it holds the first one's largest graph, or both walks stopped at their cap) and grew
    by GRAPH_MIN_GROWN_NODES: every step's graph is kept. A graph that is only larger at the
    second census (a loop unrolled over a longer sequence) holds nothing of the first."""
    g = ev.memory.graph if ev.memory is not None else None
    if g is None or (g.nodes - g.nodes_before < th.GRAPH_MIN_GROWN_NODES and not g.capped):
        return None
    return g if g.spans or (g.capped and g.nodes_before >= g.nodes) else None


def kept_store(ev: Evidence, growth: Growth | None) -> KeptGrowth | None:
    """The script's list, dict or deque that keeps the growth: its items hold KEPT_MIN_SHARE of
    what the run grew between the censuses, or it pins the spans of a fragmenting heap (an item
    or more a step). Not where the tensor census names the same container (said there)."""
    m = ev.memory
    k = m.kept if m is not None else None
    if k is None or growth is None or k.seconds <= 0:
        return None
    leak = named_leak(m.leak) if m is not None else None
    if leak is not None and leak.holder and leak.holder == k.holder:
        return None
    share = k.grown_bytes / (growth.bytes_per_s * k.seconds)
    pins = fragmented(ev, growth) is not None and k.steps > 0 and k.added >= k.steps / 2
    return k if share >= th.KEPT_MIN_SHARE or pins else None


def leveled_off(ev: Evidence) -> Bounded | None:
    """Growth a filling buffer bounds below the limit (no finding: the report's note says why)."""
    m = ev.memory
    if m is None or not m.buffers or copy_on_read(ev) is not None:
        return None
    buffer = _bounded_growth(ev)[1]
    return buffer if buffer is not None and buffer.fits else None


def _bounded_growth(ev: Evidence) -> tuple[Growth | None, Bounded | None]:
    """The growth line, and the filling buffer that bounds it if any."""
    growth = _growth(ev)
    return growth, bounded(ev, growth.bytes_per_s) if growth is not None else None
