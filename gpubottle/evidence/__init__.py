"""Typed, serialisable evidence: what was measured, before any judgement.

Every value that was not measured is None (null in JSON), never 0. A saved run can be re-diagnosed
from this alone (`Evidence.from_json`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.clock import device_covers, device_input_wait
from gpubottle.evidence.account import (
    AccountEntry,
    EvalModeTraining,
    GradsDiscarded,
    GradsForAnother,
    PhaseEvidence,
)
from gpubottle.evidence.gpu import (
    CopyEvidence,
    CudaMemoryEvidence,
    GpuEvidence,
    MemoryContents,
    NvmlDevice,
    SyncEvidence,
    SyncSite,
)
from gpubottle.evidence.host import (
    BusyThread,
    CpuEvidence,
    DebugSetting,
    EvalAutograd,
    FillingBuffer,
    GraphGrowth,
    HeapGrowth,
    InPlaceCost,
    KeptGrowth,
    LeakEvidence,
    LoaderInfo,
    MemoryEvidence,
    StackEvidence,
    StackFrameShare,
    StepEvidence,
    StepGrowth,
    SubnormalLook,
)
from gpubottle.evidence.model import (
    BackwardAgain,
    BagLookups,
    CallSite,
    CellLoop,
    CheckpointRecompute,
    DenseTable,
    InnerPerSample,
    MathInUse,
    ModelCallCount,
    OptimizerRebuilt,
    OptimizerWork,
    ParamPenalty,
    Recompiled,
    Scripted,
    SiblingModules,
    SliceLoss,
    SparseInput,
    UntrainedGrads,
)
from gpubottle.evidence.trials import Trial, TrialsEvidence
from gpubottle.serialisable import Serialisable

__all__ = [
    "AccountEntry", "BackwardAgain", "BusyThread", "CallSite", "CellLoop", "CollectorStatus", "CopyEvidence",
    "CpuEvidence",
    "CheckpointRecompute", "InnerPerSample", "ParamPenalty", "SiblingModules", "SparseInput",
    "BagLookups", "SliceLoss",
    "CudaMemoryEvidence", "DebugSetting",
    "DenseTable", "EvalAutograd", "EvalModeTraining", "GradsDiscarded", "GradsForAnother", "Evidence",
    "FillingBuffer",
    "GraphGrowth", "HeapGrowth",
    "InPlaceCost", "KeptGrowth",
    "GpuEvidence", "item_at", "LeakEvidence", "LoaderInfo", "Measured", "MemoryContents", "MemoryEvidence",
    "MathInUse", "Recompiled", "ModelCallCount", "Scripted", "OptimizerRebuilt", "OptimizerWork",
    "UntrainedGrads",
    "JobInfo", "NvmlDevice", "PhaseEvidence", "RankEvidence", "RunInfo", "StackEvidence", "StackFrameShare",
    "StepEvidence", "StepGrowth", "SubnormalLook", "SyncEvidence", "SyncSite", "TraceReadInfo", "Trial",
    "TrialsEvidence",
]


@dataclass
class CollectorStatus(Serialisable):
    """Whether one probe or sampler ran; a broken one is missing evidence, not a crash."""

    ok: bool
    reason: str | None = None
    note: str | None = None  # what it did differently (py-spy's rate lowered by the CPU budget)


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
    launcher: str | None = None  # torchrun | mp.spawn | env | srun | mpirun
    job: str | None = None  # the job's id (Slurm's job, torchrun's run id, the rendezvous endpoint)
    world_size: int | None = None  # the job's ranks, as this one was told
    outside_cores: float | None = None  # other programs' CPU on its machine during its steps
    busy_share: float | None = None  # its main thread computing, outside input waits
    communication_share: float | None = None  # collectives' share of its step (profiler window)
    communication_overlap: float | None = None  # the share of that hidden under compute
    main_cores: float | None = None
    workers: int = 0
    workers_cores: float | None = None
    worker_run_queue: float | None = None  # how long its workers waited for a core
    memory_bytes: int | None = None  # PSS peak of its processes
    status: str | None = None  # completed | steps | duration | failed | killed ...
    exit_code: int | None = None
    exception: str | None = None
    ended_at: float | None = None  # its End record's monotonic time (one machine's clock)

    @property
    def name(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.file


@dataclass
class TraceReadInfo(Serialisable):
    files: list[str] = field(default_factory=list)
    events: int = 0
    truncated: bool = False
    bytes_read: int | None = None
    bytes_total: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class JobInfo(Serialisable):
    """The job a single `gpubottle run` is one rank of (launch/job.py)."""

    rank: int
    world_size: int
    job_id: str
    node: str | None = None
    local_rank: int | None = None
    launcher: str | None = None  # env | srun | mpirun
    folder: str | None = None  # the job folder its ranks' run directories are in, when known


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
    job: JobInfo | None = None  # this run is one rank of a job a cluster's launcher started
    cells: dict[str, str] = field(default_factory=dict)  # a notebook's cells: execution count -> code


def item_at(values: list[float | None], i: int) -> float | None:
    """A per-step value, None where the list stops short (the device's clock saw fewer steps)."""
    return values[i] if i < len(values) else None


def _device_view(m: Measured, st: StepEvidence, keep: list[int]) -> None:
    """The measured steps on the device's clock, where it covers them: its work and lag (medians),
    and the input wait that costs the step (clock.device_input_wait, step by step)."""
    seen = [i for i in keep
            if item_at(st.device_s, i) is not None and item_at(st.device_lag_s, i) is not None]
    if not device_covers(seen, keep):
        return
    lags = sorted(item_at(st.device_lag_s, i) or 0.0 for i in seen)
    busy = sorted(min(item_at(st.device_lag_s, i) or 0.0, item_at(st.device_s, i) or 0.0) for i in seen)
    m.device_lag_s = lags[len(lags) // 2]
    m.device_busy_s = busy[len(busy) // 2]
    if not m.input_seen or not st.input_wait_s:
        return
    m.device_wait_s = sum(
        device_input_wait(item_at(st.device_s, i) or st.durations_s[i], item_at(st.device_lag_s, i) or 0.0,
                          item_at(st.device_input_idle_s, i), st.durations_s[i], st.input_wait_s[i])
        for i in keep)


@dataclass
class Measured:
    """The measured steps' totals (StepEvidence.measured_indices: warm-up, pauses and steps under
    gpubottle's heavier probes left out), net of time spent in evaluation and checkpoints. The one
    place these sums are made: rules, the report's steps block, rank rows and the gate read them."""

    durations_s: list[float]  # on the device's clock where it has one (StepEvidence.paced)
    wait_s: float  # the host's input wait inside them (0.0 when none could be seen: see input_seen)
    wait_cpu_s: float | None  # the loading thread's CPU during those waits
    input_seen: bool  # a DataLoader (or a trace's DataLoader spans) could show input waits
    wait_run_queue_s: float | None = None  # ... and its run-queue time (waiting for a core)
    # Where the device's clock covers the steps (StepEvidence.device_*): the input wait that costs
    # the step (the host may wait while the device still works: what hiding the wait would win
    # back), the device's work per step (at least the backlog it still had at each step's end), and
    # that backlog: how far the host ran ahead of it (medians).
    device_wait_s: float | None = None
    device_busy_s: float | None = None
    device_lag_s: float | None = None

    @property
    def n(self) -> int:
        return len(self.durations_s)

    @property
    def total_s(self) -> float:
        return sum(self.durations_s)

    @property
    def mean_step_s(self) -> float:
        return self.total_s / self.n if self.n else 0.0

    @property
    def mean_wait_s(self) -> float:
        return self.wait_s / self.n if self.n else 0.0

    @property
    def wait_share(self) -> float:
        """Input wait over step time, 0.0 when no wait could be seen (what the rules compare): the
        device's idle time waiting for input where its clock saw it, else the host's wait."""
        total = self.total_s
        wait = self.device_wait_s if self.device_wait_s is not None else self.wait_s
        return wait / total if total > 0 else 0.0

    @property
    def host_wait_share(self) -> float:
        """The host's own wait over step time: what the loading thread's CPU is read against."""
        total = self.total_s
        return self.wait_s / total if total > 0 else 0.0

    @property
    def input_share(self) -> float | None:
        """The same for people: None (null) when no input wait could be seen, never 0."""
        return self.wait_share if self.input_seen and self.total_s > 0 else None

    @property
    def compute_s(self) -> float:
        """Mean time per step not spent waiting for input (on the device's clock where it has one:
        the host's wait overlaps work the device still does)."""
        wait = self.device_wait_s if self.device_wait_s is not None else self.wait_s
        return max(1e-9, self.mean_step_s - wait / self.n if self.n else 0.0)


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
    # Several ranks (a multi-process job, or a folder of ranks' traces): a row per rank; the rest of
    # the evidence is the shown rank's (the first that failed, else the one the others wait for,
    # else the lowest).
    ranks: list[RankEvidence] = field(default_factory=list)
    shown_rank: int | None = None
    missing_ranks: list[int] = field(default_factory=list)  # the job's ranks no directory holds
    # The run's wall time by phase, launch to exit, and the phases diagnosed like the training
    # loop (evaluation passes, per loader).
    account: list[AccountEntry] = field(default_factory=list)
    phases: list[PhaseEvidence] = field(default_factory=list)
    debug: list[DebugSetting] = field(default_factory=list)  # debugging switches on while it trained
    eval_autograd: list[EvalAutograd] = field(default_factory=list)  # evaluations recording graphs
    eval_mode: EvalModeTraining | None = None  # training steps taken with the model in eval mode
    grads_discarded: GradsDiscarded | None = None  # backward passes cleared before a step used them
    # ...and those one optimizer's zero_grad() cleared of a backward another stepped on
    grads_for_another: GradsForAnother | None = None
    recompute: CheckpointRecompute | None = None  # activation checkpointing's forwards, run again
    optimizer_rebuilt: OptimizerRebuilt | None = None  # an optimizer built anew in the loop
    optimizer_work: OptimizerWork | None = None  # the optimizer step's time and implementation
    model_calls: ModelCallCount | None = None  # how often a counted step called the model
    step_growth: StepGrowth | None = None  # steps taking longer as the run goes
    math_in_use: list[MathInUse] = field(default_factory=list)  # autocast, torch.compile already used
    recompiled: list[Recompiled] = field(default_factory=list)  # functions torch.compile compiled again
    params_dtype: str | None = None  # the dtype of most of the optimized parameters ("float64")
    subnormals: list[SubnormalLook] = field(default_factory=list)  # looks at the optimizers' tensors
    torch_import_site: str | None = None  # the user's line whose import brought torch in
    # A line asking for a gradient to differentiate again (create_graph=True): torch.compile refuses it
    double_backward: str | None = None
    channels_last: str | None = None  # the script's line naming torch.channels_last
    # The line packing sequences for an RNN (pack_padded_sequence, pack_sequence): it skips the padding
    packs_sequences: str | None = None

    def measured(self) -> Measured | None:
        """The measured steps' totals; None when no step is measured."""
        st = self.steps
        keep = st.measured_indices()
        if not keep:
            return None
        net = st.net_durations()
        waits = st.input_wait_s
        cpus = [st.input_wait_cpu_s[i] for i in keep if i < len(st.input_wait_cpu_s)]
        known = [c for c in cpus if c is not None]
        queues = [st.input_wait_run_queue_s[i] for i in keep if i < len(st.input_wait_run_queue_s)]
        queued = [q for q in queues if q is not None]
        seen = bool(waits) and (bool(self.loaders) or st.source in ("profiler", "trace-optimizer"))
        m = Measured(
            durations_s=[net[i] for i in keep],
            wait_s=sum(waits[i] for i in keep) if waits else 0.0,
            wait_cpu_s=sum(known) if known else None,
            input_seen=seen,
            wait_run_queue_s=sum(queued) if queued else None,
        )
        _device_view(m, st, keep)
        return m

    def measured_durations(self) -> list[float]:
        got = self.measured()
        return got.durations_s if got is not None else []

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        if "pace_rank" in data and "shown_rank" not in data:  # evidence saved before the rename
            data = {**data, "shown_rank": data["pace_rank"]}
        out: Evidence = super().from_json(data)
        return out
