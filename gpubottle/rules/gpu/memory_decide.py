"""The run died of CUDA OOM, or its memory came near the device's capacity, or allocated memory
climbs toward it; what filled it, and from that which fixes in which order.

What fills the memory picks the fix. Activations (everything beyond weights, gradients and optimizer
state) scale with the batch, so the batch that fits is computed from the measured split; model state
does not shrink with the batch at all, and then the fix is sharding, precision or a leaner optimizer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gpubottle.evidence import (
    CudaMemoryEvidence,
    Evidence,
    GraphGrowth,
    LeakEvidence,
    LoaderInfo,
    MemoryContents,
)
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.rules.memory.decide import graph_kept, named_leak

# c10's format_size prints up to 1024 bytes as "N bytes", then KiB/MiB/GiB with two decimals.
_REQUEST = re.compile(r"Tried to allocate ([\d.]+) ?(bytes|B|KiB|MiB|GiB|TiB)\b")
_UNITS = {"bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def requested_bytes(message: str) -> int | None:
    """The allocation that failed, from torch's OutOfMemoryError message."""
    m = _REQUEST.search(message)
    return int(float(m.group(1)) * _UNITS[m.group(2)]) if m else None


@dataclass
class Held:
    """The biggest group of same-shaped tensors the script still referenced."""

    label: str
    bytes: int
    count: int


@dataclass
class BatchChange:
    """The batch to train at (with gradients accumulated over `steps` to keep the effective one),
    computed from the measured split when an OOM gave it (`activations_bytes`), else halved."""

    old: int
    new: int
    site: str | None
    activations_bytes: int | None = None
    budget_bytes: int | None = None

    @property
    def steps(self) -> int:
        return max(1, self.old // self.new)


@dataclass
class GpuMemory:
    """An OOM (died) or a peak near capacity, and what the words need to say it."""

    died: bool
    severity: str
    total_bytes: int
    allocated_bytes: int  # at the OOM, or the peak
    reserved_bytes: int | None
    free_bytes: int | None = None  # at the OOM
    message: str | None = None  # the OOM's first line
    used: float | None = None  # peak reserved share of the device (near capacity)
    contents: MemoryContents | None = None
    held: Held | None = None  # at an OOM only
    fragmentation_bytes: int | None = None
    others: list[tuple[str, int]] = field(default_factory=list)  # (device, bytes) other processes held
    batch: BatchChange | None = None
    state_share: float = 0.0  # model state over allocated memory
    state_first: bool = False  # the model state fix leads (it dominates)
    moment_known: bool = False  # the allocator's numbers at the OOM were read
    suggest_snapshot: bool = False  # died, and no memory snapshot was taken


@dataclass
class TraceMemory:
    """A profiler trace's memory events near the device's capacity."""

    severity: str
    used: float
    peak_bytes: int
    total_bytes: int
    fragmentation_bytes: int | None


@dataclass
class GpuGrowth:
    severity: str
    bytes_per_s: float
    r2: float
    total_bytes: int
    left_bytes: int
    exhaustion_s: float
    leak: LeakEvidence | None
    graph: GraphGrowth | None = None  # a tensor that keeps every step's autograd graph


def _held(c: MemoryContents, allocated: int) -> Held | None:
    if not c.top_tensors or allocated <= 0:
        return None
    top = c.top_tensors[0]
    size = int(top[1])
    if size < th.HELD_TENSORS_MIN * allocated:
        return None
    return Held(str(top[0]), size, int(top[2]) if len(top) > 2 else 1)


def _fitting_batch(lo: LoaderInfo, m: CudaMemoryEvidence, c: MemoryContents) -> BatchChange | None:
    """The largest power-of-two batch whose activations fit beside the model state."""
    if not lo.batch_size or lo.batch_size < 2 or m.oom_allocated_bytes is None:
        return None
    capacity = (m.oom_reserved_bytes or 0) + (m.oom_free_bytes or 0)
    if capacity <= 0:
        return None
    need = m.oom_allocated_bytes + (requested_bytes(m.oom or "") or 0)
    activations = need - c.model_state_bytes
    budget = th.GPU_BATCH_HEADROOM * capacity - c.model_state_bytes
    if activations <= 0 or budget <= 0:
        return None
    factor = budget / activations
    if factor >= 1:
        return None
    batch = 2 ** int(math.floor(math.log2(max(1.0, lo.batch_size * factor))))
    return BatchChange(lo.batch_size, batch, lo.site, int(activations), int(budget))


def _batch(ev: Evidence, m: CudaMemoryEvidence) -> BatchChange | None:
    lo = main_loader(ev)
    if lo is None or not lo.batch_size or lo.batch_size <= 1:
        return None
    c = m.contents
    fitted = _fitting_batch(lo, m, c) if (m.oom and c is not None) else None
    if fitted is not None and fitted.new >= 1:
        return fitted
    return BatchChange(lo.batch_size, lo.batch_size // 2, lo.site)


def fragmentation(reserved: int | None, allocated: int | None, total: int | None) -> int | None:
    """Bytes reserved by the allocator but not in tensors, when that is fragmentation."""
    if not reserved or not allocated or not total:
        return None
    slack = reserved - allocated
    if slack > th.FRAGMENTATION_SLACK * total or (
            reserved > th.FRAGMENTATION_RATIO * allocated and slack > th.FRAGMENTATION_SLACK_MIN * total):
        return slack
    return None


def _others(ev: Evidence, total: int) -> list[tuple[str, int]]:
    """Memory other processes held on the device (NVML), which the allocator could not have."""
    out = []
    for d in ev.nvml:
        if d.role == "run" and d.mem_used_peak and d.proc_mem_peak is not None and d.mem_total:
            other = d.mem_used_peak - d.proc_mem_peak
            if other > th.OTHER_PROCESSES_MIN * (total or d.mem_total):
                out.append((d.label, other))
    return out


def decide_cuda_oom(ev: Evidence) -> GpuMemory | None:
    """From the allocator inside the script: an OOM, or a peak near the device's capacity."""
    m = ev.cuda_memory
    if m is None:
        return None
    total = m.total_bytes or 0
    if m.oom:
        allocated = m.oom_allocated_bytes or 0
        d = GpuMemory(True, "critical", total, allocated, m.oom_reserved_bytes, m.oom_free_bytes,
                      m.oom.splitlines()[0][:300], contents=m.contents,
                      moment_known=m.oom_allocated_bytes is not None and bool(total),
                      suggest_snapshot=not m.snapshot)
        d.held = _held(m.contents, allocated) if m.contents is not None else None
        d.fragmentation_bytes = fragmentation(m.oom_reserved_bytes, m.oom_allocated_bytes, total)
    else:
        if not total or not m.peak_reserved_bytes:
            return None
        used = m.peak_reserved_bytes / total
        if used < th.GPU_MEM_WARNING:
            return None
        allocated = m.peak_allocated_bytes or 0
        d = GpuMemory(False, "critical" if used >= th.GPU_MEM_CRITICAL else "warning", total, allocated,
                      m.peak_reserved_bytes, used=used, contents=m.contents)
        d.fragmentation_bytes = fragmentation(m.peak_reserved_bytes, allocated, total)
    d.others = _others(ev, total)
    d.batch = _batch(ev, m)
    c = m.contents
    d.state_share = c.model_state_bytes / allocated if c is not None and allocated > 0 else 0.0
    d.state_first = d.state_share >= th.MODEL_STATE_FIRST
    return d


def decide_trace_memory(ev: Evidence) -> TraceMemory | None:
    """From a profiler trace's memory events; a run's allocator readings (cuda_oom) are better."""
    g = ev.gpu
    if ev.cuda_memory is not None or g is None or not g.uses_gpu or not g.total_memory_bytes:
        return None
    cap = g.total_memory_bytes
    peak = g.peak_reserved_bytes or (None if g.allocated_relative else g.peak_allocated_bytes)
    if not peak:
        return None
    used = peak / cap
    if used < th.GPU_MEM_WARNING:
        return None
    allocated = None if g.allocated_relative else g.peak_allocated_bytes
    return TraceMemory("critical" if used >= th.GPU_MEM_CRITICAL else "warning", used, peak, cap,
                       fragmentation(g.peak_reserved_bytes, allocated, cap))


def decide_gpu_growth(ev: Evidence) -> GpuGrowth | None:
    """Allocated CUDA memory climbing steadily over the measured steps: the OOM is coming."""
    m = ev.cuda_memory
    if m is None or m.oom or not m.total_bytes or m.growth_bytes_per_s is None:
        return None
    g, r2 = m.growth_bytes_per_s, m.growth_r2 or 0.0
    if (g < th.GPU_GROWTH_MIN_BYTES_PER_S or r2 < th.GROWTH_MIN_R2
            or m.growth_samples < th.GPU_GROWTH_MIN_SAMPLES
            or g * (m.growth_span_s or 0.0) < th.GPU_GROWTH_MIN_TOTAL_BYTES):
        return None
    left = max(0, m.total_bytes - (m.last_allocated_bytes or 0))
    eta = left / g
    if eta > th.EXHAUSTION_WARNING_S:
        return None
    return GpuGrowth("critical" if eta <= th.EXHAUSTION_CRITICAL_S else "warning", g, r2, m.total_bytes,
                     left, eta, named_leak(ev.memory.leak if ev.memory is not None else None),
                     graph_kept(ev))
