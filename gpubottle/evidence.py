"""Typed, serialisable evidence: what was measured, before any judgement.

Every value that was not measured is None (null in JSON), never 0. A saved run can be re-diagnosed
from this alone (`Evidence.from_json`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.clock import measured_indices
from gpubottle.collect.nvml_devices import device_label
from gpubottle.serialisable import Serialisable
from gpubottle.trials.records import TrialsEvidence


@dataclass
class CollectorStatus(Serialisable):
    """Whether one probe or sampler ran; a broken one is missing evidence, not a crash."""

    ok: bool
    reason: str | None = None


@dataclass
class LoaderInfo(Serialisable):
    """One torch DataLoader as the script configured it, and where."""

    id: int
    site: str | None = None  # file:line of the DataLoader(...) call in user code
    built_by: str | None = None  # a library's function that built it for the user (HF Trainer...)
    num_workers: int | None = None
    batch_size: int | None = None
    pin_memory: bool | None = None
    prefetch_factor: int | None = None
    persistent_workers: bool | None = None
    start_method: str | None = None
    drop_last: bool | None = None
    dataset_class: str | None = None
    dataset_getitem: str | None = None  # file:line of __getitem__ (or __iter__ for iterable datasets)
    dataset_len: int | None = None
    iterable: bool | None = None
    collate_fn: str | None = None
    worker_pids: list[int] = field(default_factory=list)
    batches: int = 0
    builds: int = 1  # DataLoader objects built at this site with this configuration (one per epoch?)
    iterators: int = 0  # how many times iteration (an epoch) started
    first_batch_waits_s: list[float] = field(default_factory=list)  # wait for each epoch's first batch


@dataclass
class StepEvidence(Serialisable):
    """Training steps as seen by the hooks in the script's process."""

    source: str  # optimizer | backward | dataloader | none
    durations_s: list[float] = field(default_factory=list)  # every step, warm-up included
    input_wait_s: list[float] = field(default_factory=list)  # wait for batches within each step
    input_wait_cpu_s: list[float | None] = field(default_factory=list)  # main CPU while loading
    # Of each step's input wait, what was DataLoader workers starting again (a new epoch's first
    # batch, beyond the usual wait): a cost of the loader's settings, not of loading.
    start_up_wait_s: list[float] = field(default_factory=list)
    warmup: int = 0  # leading steps left out of every statistic
    outliers: list[int] = field(default_factory=list)  # indices of pauses (validation, checkpoints)
    instrumented: list[int] = field(default_factory=list)  # steps slowed by our profiler/sync probes
    window_start: float | None = None  # monotonic time of the first measured step's start
    window_end: float | None = None
    optimizers: int = 0
    backward_calls: int = 0
    batches: int = 0

    def measured(self) -> list[int]:
        """Indices of the steps every statistic uses (see gpubottle/clock.py)."""
        return measured_indices(len(self.durations_s), self.warmup, self.instrumented, self.outliers)


@dataclass
class CpuEvidence(Serialisable):
    """CPU use over the measured window, in cores (1.0 = one core fully busy)."""

    samples: int = 0
    interval_s: float | None = None
    cores_logical: int | None = None
    cores_affinity: int | None = None
    cgroup_quota_cores: float | None = None
    cores_available: float | None = None
    ranks_sharing: int = 1  # ranks of a job on this machine; cores_available is one rank's share
    main_cores: float | None = None
    # The main process's main thread (the loop's own thread): share of time it ran, and share it was
    # runnable but waiting for a core. What is left it was blocked (I/O, a queue, sleep).
    main_thread_cores: float | None = None
    main_run_queue: float | None = None
    workers_cores: float | None = None
    workers_seen: int = 0
    per_worker_cores: float | None = None  # mean busy fraction of one worker
    per_worker_max_cores: float | None = None
    per_worker_run_queue: float | None = None  # fraction of time a worker waited for a CPU
    other_children_cores: float | None = None
    tree_cores: float | None = None
    system_cores: float | None = None  # busy cores machine-wide
    outside_cores: float | None = None  # busy cores used by processes outside the run
    top_outside: list[dict[str, Any]] = field(default_factory=list)
    iowait_fraction: float | None = None
    loadavg_1m: float | None = None
    main_threads: int | None = None
    torch_threads: int | None = None
    torch_interop_threads: int | None = None
    threads_site: str | None = None  # file:line where the script set torch's threads, if it did
    thread_env: dict[str, str] = field(default_factory=dict)  # OMP_NUM_THREADS etc. as the script saw them
    supervisor_cores: float | None = None  # gpubottle's own sampling cost


@dataclass
class LeakEvidence(Serialisable):
    """Tensors referenced from Python that piled up between two censuses taken while memory climbed."""

    label: str  # shape, dtype and device
    grown_bytes: int
    grown_count: int
    steps: int  # training steps between the two censuses
    seconds: float
    holder: str | None = None  # where the script keeps them: 'history (train.py, a module-level list)'
    total_bytes: int | None = None  # all tensors of that shape at the second census
    census_cost_s: float | None = None


@dataclass
class MemoryEvidence(Serialisable):
    """Host memory: the run's own footprint (PSS: pages shared by forked workers counted once)."""

    samples: int = 0
    total_bytes: int | None = None
    limit_bytes: int | None = None  # cgroup limit where one applies, else physical memory
    limit_source: str | None = None
    peak_tree_bytes: int | None = None
    peak_main_bytes: int | None = None
    peak_workers_bytes: int | None = None
    min_available_bytes: int | None = None
    peak_used_fraction: float | None = None
    growth_bytes_per_s: float | None = None
    growth_r2: float | None = None
    projected_exhaustion_s: float | None = None
    swap_used_peak_bytes: int | None = None
    swap_growth_bytes: int | None = None
    series: list[list[float]] = field(default_factory=list)  # [t, tree_bytes, available_bytes]
    leak: LeakEvidence | None = None
    # DataLoader workers' private memory (USS) over the measured steps: forked workers that copy
    # what they read (copy-on-read of Python objects) grow here while the main process stays flat.
    workers_growth_bytes_per_s: float | None = None
    workers_growth_r2: float | None = None
    workers_private_bytes: int | None = None  # at the last sample
    main_before_workers_bytes: int | None = None  # the main process before workers started


@dataclass
class StackFrameShare(Serialisable):
    function: str
    location: str  # file:line
    share: float  # fraction of the role's samples with this frame on the stack


@dataclass
class StackEvidence(Serialisable):
    """py-spy samples attributed by process role."""

    samples_main: int = 0
    samples_workers: int = 0
    main_phases: dict[str, float] = field(default_factory=dict)  # data/forward/backward/optimizer/other
    main_loop_input_share: float | None = None  # making batches in the loop's own code (no DataLoader)
    worker_hot: list[StackFrameShare] = field(default_factory=list)
    main_hot: list[StackFrameShare] = field(default_factory=list)
    # User functions called by the loop outside the model, data and optimizer (share of main samples)
    main_outside_model: list[StackFrameShare] = field(default_factory=list)
    worker_idle_fraction: float | None = None
    worker_io_fraction: float | None = None
    speedscope: str | None = None


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
class RankEvidence(Serialisable):
    """One rank of a job: a file of a folder of traces, or a rank process of a `gpubottle run`."""

    rank: int | None
    file: str  # its trace, or its events file
    steps: int
    mean_step_s: float | None
    input_share: float | None = None
    kernel_share: float | None = None
    # Ranks of a run (None for traces):
    node: str | None = None
    local_rank: int | None = None
    pid: int | None = None
    launcher: str | None = None  # torchrun | mp.spawn
    busy_share: float | None = None  # its main thread computing, outside input waits
    communication_share: float | None = None  # collectives' share of its step (profiler window)
    communication_overlap: float | None = None  # the share of that hidden under compute
    main_cores: float | None = None
    workers: int = 0
    workers_cores: float | None = None
    worker_run_queue: float | None = None  # how long its workers waited for a core
    memory_bytes: int | None = None  # PSS peak of its processes
    verdict: str | None = None  # its own diagnosis
    why: str | None = None  # its own leading finding
    status: str | None = None  # completed | steps | duration | failed | killed ...
    exit_code: int | None = None
    exception: str | None = None
    ended_at: float | None = None  # its End record's monotonic time (one machine's clock)

    @property
    def name(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.file


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
    sync_share: float | None = None
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


@dataclass
class TraceReadInfo(Serialisable):
    files: list[str] = field(default_factory=list)
    events: int = 0
    truncated: bool = False
    bytes_read: int | None = None
    bytes_total: int | None = None
    notes: list[str] = field(default_factory=list)
    ranks: list[RankEvidence] = field(default_factory=list)  # one per file of a folder


@dataclass
class RunInfo(Serialisable):
    kind: str  # run | trace
    command: list[str] = field(default_factory=list)
    target: str | None = None
    cwd: str | None = None
    run_dir: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    stop_reason: str | None = None  # completed | failed | steps | duration | interrupted | killed
    exception: str | None = None
    python: str | None = None
    torch_version: str | None = None
    platform: str | None = None
    collectors: dict[str, CollectorStatus] = field(default_factory=dict)
    trace: TraceReadInfo | None = None


@dataclass
class Evidence(Serialisable):
    run: RunInfo
    steps: StepEvidence
    loaders: list[LoaderInfo] = field(default_factory=list)
    cpu: CpuEvidence | None = None
    memory: MemoryEvidence | None = None
    stacks: StackEvidence | None = None
    gpu: GpuEvidence | None = None
    nvml: list[NvmlDevice] = field(default_factory=list)
    sync_sites: list[SyncSite] = field(default_factory=list)
    cuda_memory: CudaMemoryEvidence | None = None
    trials: TrialsEvidence | None = None  # `run --try-fixes`
    # A multi-process job (torchrun, mp.spawn): every rank; the rest of the evidence is the
    # rank that sets the pace (pace_rank).
    ranks: list[RankEvidence] = field(default_factory=list)
    pace_rank: int | None = None
