"""Reading the event file the script's probes write, whole or incrementally (for the live status).

Records are the named tuples of gpubottle/wire.py. Every kind is handled on purpose: kept for the
analysis, replayed through the step clock, or turned into missing-evidence notes (ProbeFailed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gpubottle.clock import StepClock
from gpubottle.wire import (
    Backward,
    Batch,
    BatchLeaves,
    Checkpointed,
    CudaContents,
    CudaDevices,
    CudaEnd,
    CudaPeak,
    CudaSample,
    DebugSwitch,
    DeviceMarks,
    End,
    EvalCalls,
    EvalForward,
    IterStarted,
    LeakCensus,
    LoaderBuilt,
    MathMode,
    ModelCalls,
    ModeSet,
    Oom,
    OptimizerBuilt,
    OptimizerStep,
    Perturbed,
    ProbeCost,
    ProbeFailed,
    Probes,
    RankStart,
    Recompiles,
    Saved,
    SnapshotSaved,
    Start,
    Stop,
    Subnormals,
    SyncSites,
    ThreadsSet,
    TorchInfo,
    Unhooked,
    WindowSaved,
    WindowStarted,
    ZeroGrads,
    decode_line,
)


class Sink(Protocol):
    bad_lines: int

    def add(self, rec: Any) -> None: ...


@dataclass
class ChildEvents:
    """Everything the probes reported, grouped by kind, with the step clock replayed in order."""

    start: Start | None = None
    rank: RankStart | None = None  # a rank of a multi-process job
    end: End | None = None
    stop: Stop | None = None
    torch: TorchInfo | None = None
    threads_set: list[ThreadsSet] = field(default_factory=list)  # the script's set_num_threads calls
    debug_switches: list[DebugSwitch] = field(default_factory=list)  # anomaly detection on/off, ...
    math_modes: list[MathMode] = field(default_factory=list)  # autocast, torch.compile in use
    subnormals: list[Subnormals] = field(default_factory=list)  # looks at the optimizers' tensors
    loaders: dict[int, dict[str, Any]] = field(default_factory=dict)
    iters: list[IterStarted] = field(default_factory=list)
    batch_leaves: list[BatchLeaves] = field(default_factory=list)  # each loader's first batches'
    batches: list[Batch] = field(default_factory=list)
    opt_steps: list[OptimizerStep] = field(default_factory=list)
    optimizers: list[OptimizerBuilt] = field(default_factory=list)
    backwards: list[Backward] = field(default_factory=list)
    probes: dict[str, str | None] = field(default_factory=dict)  # install status of each probe
    failures: dict[str, str] = field(default_factory=dict)  # probe -> why it gave no evidence
    cuda_peak: CudaPeak | None = None  # peaks at step boundaries
    cuda_end: CudaEnd | None = None  # the allocator's own counters at the end
    cuda_devices: dict[int, list[Any]] = field(default_factory=dict)  # CUDA index -> [index, uuid, name]
    cuda_series: list[CudaSample] = field(default_factory=list)
    oom: str | None = None
    window_started: WindowStarted | None = None
    window_saved: WindowSaved | None = None
    sync_sites: SyncSites | None = None
    snapshot: str | None = None
    cuda_contents: dict[str, CudaContents] = field(default_factory=dict)  # moment -> contents
    perturbed: list[Perturbed] = field(default_factory=list)
    unhooked: list[Unhooked] = field(default_factory=list)  # blocks of steps run without hooks
    device_marks: list[list[Any]] = field(default_factory=list)  # DeviceMarks' rows, in order
    device_budget: tuple[int, int, float] = (0, 0, 0.0)  # the last DeviceMarks' seen, skipped, spent_s
    leak_censuses: list[LeakCensus] = field(default_factory=list)
    saves: list[Saved] = field(default_factory=list)  # torch.save and other checkpoint writes
    modes: list[ModeSet] = field(default_factory=list)  # model.train() / model.eval() calls
    eval_forwards: list[EvalForward] = field(default_factory=list)  # each eval()'s first forward
    eval_calls: list[EvalCalls] = field(default_factory=list)  # each evaluated module's first pass
    model_calls: list[ModelCalls] = field(default_factory=list)  # a counted step's model calls
    zero_grads: list[ZeroGrads] = field(default_factory=list)  # a few steps' zero_grad() calls
    checkpointed: Checkpointed | None = None  # activation checkpointing timed over a few steps
    recompiles: Recompiles | None = None  # torch.compile's recompilations, read at the end
    probe_cost: ProbeCost | None = None
    clock: StepClock = field(default_factory=lambda: StepClock(keep_times=True))
    bad_lines: int = 0
    unknown: int = 0

    def add(self, rec: Any) -> None:
        handler = _HANDLERS.get(type(rec))
        if handler is None:
            self.unknown += 1
        else:
            handler(self, rec)

    def worker_pids(self) -> set[int]:
        return {int(p) for it in self.iters for p in (it.worker_pids or []) if p}


def _batch(ev: ChildEvents, r: Batch) -> None:
    ev.batches.append(r)
    ev.clock.fetch(r.t0)


def _opt_step(ev: ChildEvents, r: OptimizerStep) -> None:
    ev.opt_steps.append(r)
    ev.clock.optimizer_step(r.opt, r.t)


def _backward(ev: ChildEvents, r: Backward) -> None:
    ev.backwards.append(r)
    ev.clock.backward(r.t0, r.t1)


def _opt_built(ev: ChildEvents, r: OptimizerBuilt) -> None:
    ev.optimizers.append(r)
    ev.clock.optimizer_created(r.opt)


def _unhooked(ev: ChildEvents, r: Unhooked) -> None:
    ev.unhooked.append(r)
    ev.clock.unhooked(int(r.steps), float(r.t1), float(r.t0))


def _stop(ev: ChildEvents, r: Stop) -> None:
    ev.stop = r
    ev.clock.stop(r.t)


def _failed(ev: ChildEvents, r: ProbeFailed) -> None:
    # The first reason is the one that explains the rest (a census that fails once fails again).
    ev.failures.setdefault(r.probe, r.reason)


def _set(name: str) -> Any:
    def handler(ev: ChildEvents, r: Any) -> None:
        setattr(ev, name, r)

    return handler


def _append(name: str) -> Any:
    def handler(ev: ChildEvents, r: Any) -> None:
        getattr(ev, name).append(r)

    return handler


def _device_marks(ev: ChildEvents, r: DeviceMarks) -> None:
    ev.device_marks.extend(list(m) for m in r.marks)
    ev.device_budget = (int(r.seen), int(r.skipped), float(r.spent_s))  # so far: the last one holds


_HANDLERS: dict[type, Any] = {
    Batch: _batch,
    OptimizerStep: _opt_step,
    Backward: _backward,
    OptimizerBuilt: _opt_built,
    Stop: _stop,
    Unhooked: _unhooked,
    ProbeFailed: _failed,
    IterStarted: _append("iters"),
    BatchLeaves: _append("batch_leaves"),
    ThreadsSet: _append("threads_set"),
    DebugSwitch: _append("debug_switches"),
    MathMode: _append("math_modes"),
    Subnormals: _append("subnormals"),
    CudaSample: _append("cuda_series"),
    Perturbed: _append("perturbed"),
    DeviceMarks: _device_marks,
    LeakCensus: _append("leak_censuses"),
    Saved: _append("saves"),
    ModeSet: _append("modes"),
    EvalForward: _append("eval_forwards"),
    EvalCalls: _append("eval_calls"),
    ModelCalls: _append("model_calls"),
    ZeroGrads: _append("zero_grads"),
    Checkpointed: _set("checkpointed"),
    Recompiles: _set("recompiles"),
    ProbeCost: _set("probe_cost"),
    Start: _set("start"),
    RankStart: _set("rank"),
    End: _set("end"),
    TorchInfo: _set("torch"),
    CudaPeak: _set("cuda_peak"),
    CudaEnd: _set("cuda_end"),
    WindowStarted: _set("window_started"),
    WindowSaved: _set("window_saved"),
    SyncSites: _set("sync_sites"),
    LoaderBuilt: lambda ev, r: ev.loaders.__setitem__(int(r.config["id"]), r.config),
    Probes: lambda ev, r: ev.probes.update(r.status),
    Oom: lambda ev, r: setattr(ev, "oom", str(r.message)),
    SnapshotSaved: lambda ev, r: setattr(ev, "snapshot", str(r.path)),
    CudaContents: lambda ev, r: ev.cuda_contents.__setitem__(str(r.moment), r),
    CudaDevices: lambda ev, r: ev.cuda_devices.update({int(d[0]): list(d) for d in r.devices}),
}


class EventTail:
    """Reads complete new lines from a file that another process appends to, handing each record to
    a sink (a ChildEvents that keeps everything, or the live status's bounded tracker)."""

    def __init__(self, path: str, sink: Sink | None = None) -> None:
        self.path = path
        self.events: Any = sink if sink is not None else ChildEvents()
        self._offset = 0
        self._partial = b""

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except OSError:
            return 0
        if not chunk:
            return 0
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if not line:
                continue
            try:
                rec = decode_line(line)
            except ValueError:
                self.events.bad_lines += 1
                continue
            if rec is not None:
                try:
                    self.events.add(rec)
                except (TypeError, ValueError, KeyError):  # a record with fields of the wrong type
                    self.events.bad_lines += 1
        return len(lines)


def fill_unread(batches: list[Batch]) -> list[Batch]:
    """Fetches whose thread's CPU and run-queue time the probe did not read (while fetches are
    short, one in 8, later 32, is read, by count: probes/thread_sched.FetchSampling) take the mean
    of the ones read among them: those between unread ones of the same loader and thread. Not the
    fetches read while every one was (the first ones, or long ones): a loader's first fetches do
    first-time work, and averaged in at full weight they read its short fetches' CPU above their
    wait. Left as they are where none of theirs was read."""
    by_key: dict[tuple[int, int | None], list[int]] = {}
    for i, b in enumerate(batches):
        if not b.ended:
            by_key.setdefault((b.loader, b.thread), []).append(i)
    fill: dict[tuple[int, int | None], tuple[float | None, float | None]] = {}
    for key, idx in by_key.items():
        unread = [b.cpu is None and b.rq is None for b in (batches[i] for i in idx)]
        if not any(unread):
            continue
        # Read in a sampled stretch: unread fetches on both sides (or at the stream's end); the
        # last of the fetches all read, before the first unread, is not.
        beside = [batches[i] for k, i in enumerate(idx) if not unread[k]
                  and (k == 0 or unread[k - 1]) and (k + 1 == len(idx) or unread[k + 1])]
        pool = beside or [batches[i] for k, i in enumerate(idx) if not unread[k]]
        if not pool:
            continue
        cpus = [float(b.cpu) for b in pool if b.cpu is not None]
        queues = [float(b.rq) for b in pool if b.rq is not None]
        fill[key] = (sum(cpus) / len(cpus) if cpus else None, sum(queues) / len(queues) if queues else None)
    if not fill:
        return batches
    out = []
    for b in batches:
        got = fill.get((b.loader, b.thread))
        if got is not None and b.cpu is None and b.rq is None:
            b = b._replace(cpu=got[0], rq=got[1])
        out.append(b)
    return out


def read_events(path: str) -> ChildEvents:
    events = ChildEvents()
    EventTail(path, events).poll()
    events.batches = fill_unread(events.batches)
    return events
