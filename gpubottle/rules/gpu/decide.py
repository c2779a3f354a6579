"""From a profiler trace (a user's, or the window `run` profiles) and from NVML: transfer-bound,
compute-bound on the GPU (or a CPU-only trace's operators), launch-bound, sync-bound,
communication-bound, throttling and a device's memory."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubottle.collect.nvml import NORMAL_AT_FULL_LOAD
from gpubottle.evidence import Evidence, GpuEvidence, NvmlDevice, SyncSite
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import gpu_sets_pace, main_loader


def gpu_steps(ev: Evidence) -> GpuEvidence | None:
    g = ev.gpu
    return g if g is not None and g.uses_gpu and g.step_s and g.steps else None


def profiled(ev: Evidence) -> GpuEvidence | None:
    """Profiler evidence with or without a GPU (a CPU-only trace still has its breakdown)."""
    g = ev.gpu
    return g if g is not None and g.step_s and g.steps else None


@dataclass
class Resident:
    """The whole dataset, at the bytes per sample the copies show, fits in the GPU's free memory."""

    samples: int
    per_sample_bytes: float
    free_bytes: int
    site: str | None

    @property
    def whole_bytes(self) -> float:
        return self.per_sample_bytes * self.samples


@dataclass
class Transfer:
    gpu: GpuEvidence
    share: float  # host<->device copies, of the step
    pageable: float  # of copy time, from pageable memory
    dtoh: float  # of copy time, device to host
    loader_site: str | None
    pin_change: bool  # the loader's pin_memory is not on yet
    resident: Resident | None

    @property
    def pin(self) -> bool:
        return self.pageable >= th.PAGEABLE_SHARE

    @property
    def dtoh_every_step(self) -> bool:
        return self.dtoh >= th.DTOH_SHARE


def _free_gpu_bytes(ev: Evidence, g: GpuEvidence) -> int | None:
    m = ev.cuda_memory
    if m is not None and m.total_bytes and m.peak_reserved_bytes:
        return m.total_bytes - m.peak_reserved_bytes
    for d in ev.nvml:
        if d.mem_total and d.mem_used_peak:
            return d.mem_total - d.mem_used_peak
    if g.total_memory_bytes and g.peak_reserved_bytes:
        return g.total_memory_bytes - g.peak_reserved_bytes
    return None


def _resident(ev: Evidence, g: GpuEvidence) -> Resident | None:
    lo = main_loader(ev)
    htod = sum(c.bytes or 0 for c in g.copies if c.direction == "HtoD")
    free = _free_gpu_bytes(ev, g)
    if lo is None or not lo.batch_size or not lo.dataset_len or not htod or not g.steps or not free:
        return None
    r = Resident(lo.dataset_len, htod / g.steps / lo.batch_size, free, lo.site)
    return r if r.whole_bytes <= th.DATASET_GPU_FRACTION * free else None


def decide_transfer(ev: Evidence) -> Transfer | None:
    g = gpu_steps(ev)
    if g is None or g.copy_share is None or g.step_s is None:
        return None
    share = g.copy_share
    if share < th.INPUT_WAIT_INFO or share * g.step_s < th.COPY_FLOOR_S:
        return None
    total = sum(c.seconds for c in g.copies) or 1.0
    lo = main_loader(ev)
    return Transfer(g, share, sum(c.seconds for c in g.copies if c.memory == "pageable") / total,
                    sum(c.seconds for c in g.copies if c.direction == "DtoH") / total,
                    lo.site if lo else None, bool(lo and lo.pin_memory is not True), _resident(ev, g))


# The order faster math is proposed in, from the kernels' precision.
FP32_MATMULS = "fp32"  # matmuls mostly in float32 without tensor cores: autocast first
HALF_MATMULS = "half"  # already in half precision: only fusing the rest is left
UNKNOWN_MIX = "unknown"


@dataclass
class GpuCompute:
    gpu: GpuEvidence
    kernel_share: float
    ampere: bool  # bfloat16 and TF32 tensor cores (compute capability 8 or later, or unknown)
    mix: str  # one of the constants above

    @property
    def half(self) -> str:
        return "bfloat16" if self.ampere else "float16 (with torch.amp.GradScaler)"


def math_order(g: GpuEvidence) -> tuple[bool, str]:
    """Whether the GPU has bfloat16 and TF32 tensor cores, and what the matmuls' precision says
    faster math should start with."""
    cc = g.compute_capability
    ampere = cc is None or not cc[:1].isdigit() or int(cc.split(".")[0]) >= 8
    mix, mm = g.matmul_precision, g.matmul_share or 0.0
    kind = UNKNOWN_MIX
    if mm >= th.MATMUL_SHARE_MIN and mix.get("fp32", 0.0) >= th.PRECISION_MAJORITY:
        kind = FP32_MATMULS
    elif mm >= th.MATMUL_SHARE_MIN and mix.get("half", 0.0) >= th.PRECISION_MAJORITY:
        kind = HALF_MATMULS
    return ampere, kind


def decide_gpu_compute(ev: Evidence) -> GpuCompute | None:
    g = gpu_steps(ev)
    if g is None or g.kernel_share is None or g.kernel_share < th.GPU_COMPUTE_BUSY:
        return None
    if g.breakdown.get("dataloader", 0.0) >= th.INPUT_WAIT_WARNING:
        return None  # input-bound: the input rules speak for this run
    return GpuCompute(g, g.kernel_share, *math_order(g))


def cpu_only_trace(ev: Evidence) -> GpuEvidence | None:
    """A trace (not a run's window) with steps and no GPU work."""
    g = profiled(ev)
    return g if g is not None and not g.uses_gpu and ev.run.kind == "trace" else None


def decide_cpu_trace_ops(g: GpuEvidence) -> float | None:
    """A CPU-only trace whose steps are mostly operators: their share of the step (the model's math
    on the CPU sets the pace; a run measures this from the loop's thread, a trace has only spans)."""
    ops = g.breakdown.get("cpu_op", 0.0)
    if ops < th.GPU_COMPUTE_BUSY or g.breakdown.get("dataloader", 0.0) >= th.INPUT_WAIT_WARNING:
        return None
    return ops


def decide_launch(ev: Evidence) -> float | None:
    """The share of the step the GPU sits idle with no work submitted, outside DataLoader waits."""
    g = gpu_steps(ev)
    if g is None or g.idle_host_share is None or g.step_s is None:
        return None
    # Time the loop spends waiting for batches is the input rules' to explain, not launch overhead.
    host_idle = g.idle_host_share - g.breakdown.get("dataloader", 0.0)
    if host_idle < th.HOST_IDLE_WARNING or host_idle * g.step_s < th.COPY_FLOOR_S:
        return None
    return host_idle


@dataclass
class Syncs:
    gpu: GpuEvidence | None
    sites: list[SyncSite]  # the script's lines that synchronise (from `run`)
    costly: bool  # the trace's synchronising calls take a large share of the step

    @property
    def share(self) -> float | None:
        return self.gpu.sync_share if self.gpu is not None else None


def decide_syncs(ev: Evidence) -> Syncs | None:
    g = gpu_steps(ev)
    costly = (g is not None and g.sync_share is not None and g.step_s is not None
              and g.sync_share >= th.SYNC_WARNING and g.sync_share * g.step_s >= th.SYNC_FLOOR_S)
    if not costly and not ev.sync_sites:
        return None
    return Syncs(g, list(ev.sync_sites), costly)


def decide_communication(ev: Evidence) -> tuple[GpuEvidence, float] | None:
    """Communication not hidden under compute: the trace and its exposed share of the step."""
    g = profiled(ev)
    if g is None or not g.communication_share:
        return None
    exposed = g.communication_share * (1 - (g.communication_overlap or 0.0))
    return (g, exposed) if exposed >= th.COMM_EXPOSED_WARNING else None


@dataclass
class DeviceState:
    """What NVML alone shows of one device the run uses."""

    device: NvmlDevice
    throttled: dict[str, float] = field(default_factory=dict)  # reasons that cost speed, share of time
    power_capped: float | None = None  # held its power limit (normal at full load), share of time
    memory_full: float | None = None  # all processes' memory over the device's, when near full


def decide_devices(ev: Evidence) -> list[DeviceState]:
    out = []
    for d in ev.nvml:
        if d.role not in ("run", "parent"):
            continue  # another tenant's GPU: its clocks do not set this run's pace
        s = DeviceState(d, {k: x for k, x in d.throttle.items() if x >= th.THROTTLE_SHARE
                            and k not in NORMAL_AT_FULL_LOAD})
        capped = d.throttle.get("sw-power-cap", 0.0)
        if not s.throttled and capped >= th.THROTTLE_SHARE:
            s.power_capped = capped
        # Another tenant's full GPU is context, never this run's verdict.
        if (d.role == "run" and d.mem_used_peak and d.mem_total
                and d.mem_used_peak / d.mem_total >= th.GPU_MEM_CRITICAL):
            s.memory_full = d.mem_used_peak / d.mem_total
        out.append(s)
    return out


@dataclass
class DevicePace:
    """The GPU sets the pace, on its own clock: the host runs ahead by `lag_s` at each step's end."""

    step_s: float
    lag_s: float
    busy_s: float  # the device's work per step (at least the backlog it still had)
    n: int


def decide_device_pace(ev: Evidence) -> DevicePace | None:
    """From the device's clock, when no profiler window measured the kernels: the host queues work
    faster than the GPU runs it (nor does the loop wait for data)."""
    w = ev.measured()
    lead = gpu_sets_pace(ev)
    if w is None or gpu_steps(ev) is not None or lead is None:
        return None
    return DevicePace(w.mean_step_s, lead, w.device_busy_s or 0.0, w.n)


def decide_busy_device(ev: Evidence) -> NvmlDevice | None:
    """The busiest of the run's devices when NVML shows it running kernels most of the time and no
    profiler window ran (nor does the loop wait for data)."""
    w = ev.measured()
    waits = w.wait_share if w is not None else 0.0
    busy = [d for d in ev.nvml if d.util_mean is not None and d.role == "run"]
    if gpu_steps(ev) is not None or not busy or waits >= th.INPUT_WAIT_WARNING:
        return None
    # NVML's utilization is the time any kernel ran, however small: a launch-bound loop of tiny kernels
    # reads as busy. Where the device's clock saw the steps, it decides: the GPU sets the pace only
    # when the host runs ahead of it (decide_device_pace says so then).
    if w is not None and w.device_lag_s is not None:
        return None
    d = max(busy, key=lambda x: x.util_mean or 0.0)
    return d if (d.util_mean or 0.0) >= th.NVML_BUSY else None
