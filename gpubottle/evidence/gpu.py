"""Evidence about the GPU side of a run: the profiler window or a trace, NVML, the CUDA allocator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.serialisable import Serialisable
from gpubottle.units import device_label


@dataclass
class CopyEvidence(Serialisable):
    direction: str  # HtoD | DtoH | DtoD | ...
    memory: str  # pageable | pinned | device
    count: int
    seconds: float
    bytes: int | None = None


@dataclass
class SyncEvidence(Serialisable):
    call: str
    count: int
    seconds: float


@dataclass
class GpuEvidence(Serialisable):
    """What the device did during the steps, from a torch.profiler trace (a user's, or run's window)."""

    source: str  # trace | profiler-window
    uses_gpu: bool = True  # False for a CPU-only trace: only the breakdown applies
    device_name: str | None = None
    total_memory_bytes: int | None = None
    steps: int = 0
    step_s: float | None = None  # mean step, device-side extended
    breakdown: dict[str, float] = field(default_factory=dict)  # role -> share of step time
    kernel_share: float | None = None
    idle_share: float | None = None
    idle_host_share: float | None = None  # GPU idle with nothing submitted: waiting on the host
    idle_between_share: float | None = None  # GPU idle with work submitted: gaps between kernels
    copy_share: float | None = None  # host<->device copies (HtoD, DtoH) only
    copies: list[CopyEvidence] = field(default_factory=list)
    device_copy_share: float | None = None  # copies that stay on the GPUs (DtoD, PtoP)
    sync_share: float | None = None  # GPU idle after the steps' own synchronising calls
    syncs: list[SyncEvidence] = field(default_factory=list)
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    allocated_relative: bool = False  # peak counted from the trace's start (2021 format)
    communication_share: float | None = None
    communication_overlap: float | None = None  # fraction of communication hidden under compute
    dropped_tail_steps: int = 0
    compute_capability: str | None = None  # "8.0"; from the trace's device properties
    matmul_share: float | None = None  # matmul/convolution kernels' share of kernel time
    matmul_precision: dict[str, float] = field(default_factory=dict)  # half/tf32/fp32/other
    top_kernels: list[list[Any]] = field(default_factory=list)  # [name, share of kernel time]
    # Kernel time whose name says neither matmul/convolution nor another known family: reported, not
    # guessed at.
    unclassified_kernel_share: float | None = None


@dataclass
class NvmlDevice(Serialisable):
    """One GPU as NVML saw it during the measured steps."""

    index: int  # NVML index of the physical GPU
    name: str | None = None
    uuid: str | None = None
    mig: int | None = None  # MIG device index inside that GPU, for a MIG instance
    # run: the script's own device (torch's UUID, or its PID on it); parent: the physical GPU of
    # the run's MIG instance; other: another tenant's; None: unknown. Only the run's decide verdicts.
    role: str | None = None
    samples: int = 0
    util_mean: float | None = None  # fraction of time a kernel was running
    util_p10: float | None = None
    mem_used_peak: int | None = None  # bytes, every process on the device
    mem_total: int | None = None
    proc_mem_peak: int | None = None  # bytes, this run's processes
    proc_mem_source: str | None = None  # pid (NVML listed the run's PIDs) | only-process (a container)
    pcie_tx_mean: float | None = None  # bytes/s
    pcie_rx_mean: float | None = None
    sm_clock_mean: float | None = None  # MHz
    sm_clock_max: float | None = None
    power_mean_w: float | None = None
    power_limit_w: float | None = None
    temp_max: float | None = None
    throttle: dict[str, float] = field(default_factory=dict)  # reason -> share of samples
    missing: list[str] = field(default_factory=list)  # metrics this device did not report

    @property
    def label(self) -> str:
        return device_label(self.index, self.mig)


@dataclass
class MemoryContents(Serialisable):
    """What the CUDA tensors were, by kind, at one moment (a step boundary after warm-up, or the OOM)."""

    moment: str  # step | oom
    step: int | None = None
    weights_bytes: int = 0
    gradients_bytes: int = 0
    optimizer_state_bytes: int = 0
    other_python_bytes: int | None = None  # tensors referenced from Python (scanned at an OOM only)
    optimizers: list[str] = field(default_factory=list)
    top_tensors: list[list[Any]] = field(default_factory=list)  # [shape and dtype, bytes, count]

    @property
    def model_state_bytes(self) -> int:
        return self.weights_bytes + self.gradients_bytes + self.optimizer_state_bytes


@dataclass
class CudaMemoryEvidence(Serialisable):
    """CUDA caching-allocator state from inside the script (never resetting its peak counters)."""

    device: int | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    total_bytes: int | None = None
    oom: str | None = None  # the OutOfMemoryError's message, when the run died of it
    oom_allocated_bytes: int | None = None
    oom_reserved_bytes: int | None = None
    oom_free_bytes: int | None = None
    snapshot: str | None = None  # a memory snapshot file (open at pytorch.org/memory_viz)
    contents: MemoryContents | None = None  # at the OOM when there was one, else after warm-up
    growth_bytes_per_s: float | None = None  # allocated memory's trend over the measured steps
    growth_r2: float | None = None
    growth_samples: int = 0
    growth_span_s: float | None = None
    last_allocated_bytes: int | None = None


@dataclass
class SyncSite(Serialisable):
    """A line of user code where the host waited for the GPU (torch's sync debug mode)."""

    location: str
    per_step: float
    call: str | None = None  # the library call under the line that synchronised (file:line)
    function: str | None = None  # the user function the line is in (a Dataset's __getitem__, say)
