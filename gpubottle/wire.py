"""The records that cross processes, named.

The script's probes write events.jsonl, the supervisor's samplers samples.jsonl and gpu.jsonl, the
stack sampler stacks/chunks.jsonl. Every line is one JSON array: the record's tag, then its fields in
order (compact, and cheap to write from inside a training step). Writers build one of the
NamedTuples below and `encode` it; readers `decode` a line back into the same NamedTuple, so no
reader indexes a positional array. A record with fields missing at the end gets their defaults (an
older writer); extra fields are dropped (a newer writer); an unknown tag decodes to None and is
counted, not fatal.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional, Union

from gpubottle.jsonio import ENCODER, loads

# --- the script's process (probes) -> events.jsonl ---------------------------------------------


class Start(NamedTuple):
    pid: int
    t: float  # time.monotonic(), which the supervisor shares (CLOCK_MONOTONIC)
    wall: float


class RankStart(NamedTuple):
    """This process is one rank of a multi-process job (torchrun's workers, mp.spawn's processes, or a
    `gpubottle run` a cluster's launcher started as one rank)."""

    rank: int
    local_rank: Optional[int]
    world_size: Optional[int]
    node: str  # host name (and torchrun's node rank): ranks of a multi-node job kept apart
    launcher: str  # torchrun | mp.spawn | env | srun | mpirun (a cluster's launcher: launch/job.py)
    job: Optional[str] = None  # the job's id, as every rank of it sees the same (launch/job.py)


class End(NamedTuple):
    how: str  # completed | exception | exit | stopped | bad-target
    detail: Optional[str]
    t: float


class Stop(NamedTuple):
    """--steps or --duration reached: the script is stopped at this step boundary."""

    reason: str  # steps | duration
    t: float


class TorchInfo(NamedTuple):
    version: str
    threads: int
    interop_threads: int
    # OMP_NUM_THREADS / MKL_NUM_THREADS as the script's process saw them when it imported torch.
    env_threads: Optional[dict[str, str]] = None
    import_t0: Optional[float] = None  # when `import torch` began and ended (start-up's biggest item)
    import_t1: Optional[float] = None
    import_site: Optional[str] = None  # the user's line whose import brought torch in


class ThreadsSet(NamedTuple):
    """The script set torch's thread pools (torch.set_num_threads / set_num_interop_threads)."""

    threads: Optional[int]
    interop_threads: Optional[int]
    site: Optional[str]  # file:line of the call in user code
    source: Optional[dict[str, Any]] = None  # where its value comes from (probes/knobs.py)


class DebugSwitch(NamedTuple):
    """A debugging switch turned on or off: autograd's anomaly detection, CUDA_LAUNCH_BLOCKING."""

    name: str  # probes/debug_switches.py's names
    on: bool
    t: float
    site: Optional[str] = None  # the user's line that set it ("the environment" for a variable)


class MathMode(NamedTuple):
    """A faster-math setting the script uses: autocast (detail: "cpu bfloat16", the first of each
    device and dtype) or torch.compile (detail: its mode), at the user's line."""

    kind: str  # probes/math_modes.py's names
    detail: str
    t: float
    site: Optional[str] = None


class LoaderBuilt(NamedTuple):
    config: dict[str, Any]  # LoaderInfo's fields, as the DataLoader was configured


class IterStarted(NamedTuple):
    """iter(loader): an epoch starts (and, with workers, the workers start)."""

    loader: int
    t: float
    worker_pids: list[int]
    grad: Optional[int] = None  # 1: autograd on when the epoch began; 0: under no_grad/inference_mode
    t0: Optional[float] = None  # when iter() was called: t - t0 built the iterator (started workers)
    site: Optional[str] = None  # the user's line that called iter() (a for loop, next(iter(loader)))
    cycled: Optional[int] = None  # 1: that line wraps the loader in itertools.cycle (it replays batches)


class BatchLeaves(NamedTuple):
    """What a loader's first batch is made of (probes/batch_leaves.py): the tensors in it (each
    crosses from a worker as shared memory and a file descriptor) and its other leaves (numbers,
    strings, objects: each pickled), once per loader; and the padding of its next few batches
    (tensors and objects -1: not counted)."""

    loader: int
    tensors: int
    objects: int
    nbytes: Optional[int] = None  # its tensors' bytes (a batch kept by itertools.cycle holds them)
    # Its most padded integer sequence tensor (probes/batch_leaves.padding): [the share of its
    # positions that are trailing padding, its length, the median and the longest row's used length].
    padding: Optional[list[Any]] = None


class Batch(NamedTuple):
    """One DataLoader.__next__ call: [t0, t1] is the loop's wait for the batch."""

    loader: int
    t0: float
    t1: float
    cpu: Optional[float]  # CPU time of the calling thread during the wait
    ended: int  # 1 when the call ended the epoch (StopIteration)
    rq: Optional[float] = None  # run-queue time of that thread during the wait (Linux schedstat)
    thread: Optional[int] = None  # the fetching thread's ident; None: the main thread


class OptimizerBuilt(NamedTuple):
    opt: int
    cls: Optional[str]
    site: Optional[str]
    dtype: Optional[str] = None  # the dtype holding most of its parameters' elements ("float64")
    tensors: Optional[int] = None  # parameter tensors it updates
    impl: Optional[str] = None  # how step() updates them: for-loop | foreach | fused (optimizer_info)
    can_fuse: Optional[bool] = None  # fused=True would work here (class and devices)
    # 1: the optimizer built before it at the same line updates the very same parameters (its first
    # parameter is the same live object: the same model, its state thrown away), 0: other ones.
    same_params: Optional[int] = None
    groups: Optional[int] = None  # its parameter groups (foreach and fused batch within each only)


class OptimizerStep(NamedTuple):
    opt: int
    t: float  # when step() returned
    t0: Optional[float] = None  # when it began
    thread: Optional[int] = None  # the stepping thread's ident; None: the main thread


class Backward(NamedTuple):
    t0: float
    t1: float


class Saved(NamedTuple):
    """One call of a save function (torch.save, safetensors, torch.distributed.checkpoint)."""

    t0: float
    t1: float
    site: Optional[str]  # file:line of the user's call
    what: str  # torch.save | safetensors.torch.save_file | ...
    bytes: Optional[int]  # what it wrote, where the file could be seen
    main: int  # 1: on the main thread (the loop waited for it); 0: another thread
    via: Optional[str] = None  # the library function that called it for the user (a Trainer's)
    state: Optional[int] = None  # of what it saved, the bytes of the model's parameters and
    # buffers and the optimizers' state (what resuming needs), counted by storage


class ModeSet(NamedTuple):
    """model.train() or model.eval() called by the script (the outer call; its recursion into the
    submodules is one record): evaluation without a DataLoader shows as an eval() ... train() span."""

    t: float
    training: int  # 1 train(), 0 eval()
    site: Optional[str]  # file:line of the user's call
    function: Optional[str]  # the user function that made it (estimate_loss)
    called_at: Optional[str] = None  # the user's line that called that function (the loop's call)
    # For eval(): 1 where the module holds layers that compute otherwise in eval mode (dropout,
    # batch norm), and 1 where its parameters are ones an optimizer of the script's updates.
    moded: Optional[int] = None
    trained: Optional[int] = None


class EvalForward(NamedTuple):
    """The first forward after an outer model.eval(): whether autograd was recording it (an
    evaluation without torch.no_grad() builds a graph per batch that nothing runs backward)."""

    t: float
    grad: int  # 1: torch.is_grad_enabled() in that forward; 0: under no_grad/inference_mode
    site: Optional[str]  # the user's line that called the model
    function: Optional[str]  # the user function it ran in (evaluate)


class EvalCalls(NamedTuple):
    """An evaluation pass's calls of the module eval() was called on (its first pass only, between
    that eval() and the next train()), and the rows they took: a model called once per sample (a
    Python loop over the validation set, `model(Xv[i:i + 1])`) is called thousands of times a pass
    where a few batches would do."""

    t: float
    calls: int
    rows: int  # summed over the calls (a 1-D float input is one row)
    module: str  # its class name
    site: Optional[str] = None  # the user's line of its first call in the pass
    whole: int = 1  # 0: counting stopped at the probe's cap before the pass ended (more calls)


class ModelCalls(NamedTuple):
    """One training step's outermost module calls (probes/model_calls.py), for the module called
    most: a model called once per sample (a Python loop over the batch) is called batch-size times
    with one row each."""

    step: int
    calls: int  # its outermost forward calls in the step
    rows: Optional[int]  # the median leading dimension of their first tensor argument
    module: Optional[str]  # its class
    site: Optional[str]  # the user's line that called it
    called: Optional[list[str]] = None  # the names the user's lines call the step's outermost
    # modules with parameters by (`net`, `self.encoder`), in the order first called
    # The module called again on the very tensor an earlier call of the step took (a second forward
    # for a metric): [the first call's line, the repeat's line], and 1 where autograd recorded it.
    repeat: Optional[list[Optional[str]]] = None
    repeat_grad: Optional[int] = None
    # Embedding tables with dense gradients the step looked rows up in: [name, rows, dim, rows the
    # step touched, its share of its optimizer's parameters, the optimizer's class] each.
    tables: Optional[list[list[Any]]] = None
    # Modules the step called with autograd on whose parameters no optimizer of the script's holds,
    # yet backward filled their .grad: [the user's name for it, its line, elements with a gradient,
    # elements the optimizers hold, 1 where no trainable parameter of it is in an optimizer, 1 where
    # its input requires grad (a perceptual loss's network: the gradient must pass through it)] each.
    untrained: Optional[list[list[Any]]] = None
    # The module with the most trainable elements, where the step accumulated its gradients more
    # times than it called it (losses backpropagated one by one through one forward): [the user's
    # name for it, its line, forward calls, backward passes, its elements, each pass's line].
    again: Optional[list[Any]] = None
    # RNN cells the step called CELL_CALLS_MIN times or more (a Python loop over time steps):
    # [class, the user's name for it, its line, calls, input size, hidden size, seconds in its
    # forwards, the counted step's seconds] each (probes/inner_calls.py).
    cells: Optional[list[list[Any]]] = None
    # Other modules with parameters the model's forward called INNER_CALLS_MIN times or more from
    # the user's line that names them: [class, the user's name for it, its line, calls, its first
    # input's shape, the outermost call's first input's shape] each (probes/inner_calls.py).
    inner: Optional[list[list[Any]]] = None
    # Lines outside the forwards that ran ops on the optimizer's parameters with autograd on (a
    # penalty over them): [the line, ops, ops on parameters, their seconds, the functions on
    # parameters] each (probes/param_ops.py).
    params: Optional[list[list[Any]]] = None
    # The lines that called the step's outermost modules: [the line, the module's name, calls,
    # most rows, 1 where autograd was on at every call, seconds in them] each, most seconds first;
    # and the counted step's own seconds (probes/model_calls.py _site_pre).
    sites: Optional[list[list[Any]]] = None
    counted_s: Optional[float] = None
    # 1 where the repeated module's weights changed between its two calls (an optimizer's step
    # between them: a GAN's discriminator for the generator's step); None: no repeat, or older run
    repeat_updated: Optional[int] = None
    # Many modules of one class the forward called one by one from one line (a depthwise
    # convolution as a list of Conv1d(1, 1, k)): [class, the user's name for them, the line,
    # modules, calls, the first's input shape, the outermost call's, 1 where all took the same
    # tensor, 1 where their parameters' shapes are alike, the first's configuration, 1 where all
    # inputs lay in one tensor's storage] each (probes/inner_calls.py).
    siblings: Optional[list[list[Any]]] = None
    # Large 2-D arguments of an outermost module's call that are almost all zeros (a graph's
    # adjacency passed dense): [class, line, position, shape, share of nonzeros] each
    # (probes/sparse_args.py).
    sparse: Optional[list[list[Any]]] = None
    # The shape of the first outermost module with parameters' first output (its first tensor's,
    # where it returns a tuple): what a loop over its slices makes a gradient of each time
    # (analysis/slice_losses.py).
    out_shape: Optional[list[int]] = None


class ZeroGrads(NamedTuple):
    """A window of a few steps (probes/zero_grads.py): each zero_grad() call in it, [t, the user's
    line], for telling gradients zeroed before the optimizer step used them."""

    t0: float
    t1: float
    calls: list[list[Any]]
    # [1 or 0, the backward's line]: the window's first backward added to the gradient the step
    # before it had used, nothing having cleared it (1); None: not told (no gradient, no hook)
    kept: Optional[list[Any]] = None
    # Several optimizers: [t, the optimizer's id, the backward's line] for each gradient a backward
    # accumulated into one watched parameter of each (probes/zero_grads.py); calls then carry the
    # optimizer's id third (None: a Module's zero_grad)
    grads: Optional[list[list[Any]]] = None


class Checkpointed(NamedTuple):
    """Activation checkpointing timed over a window of steps (probes/checkpointing.py): each step's
    [seconds, seconds in its checkpointed forwards (what backward runs again), checkpoint() calls]."""

    steps: list[list[Any]]
    site: Optional[str]  # the user's line that called checkpoint() most (or that led to it)
    via: Optional[str]  # the library function that called it for the user (transformers')
    blocks: list[str]  # what it wrapped, most called first (`Block`, `GPT2Block`)


class ProbeCost(NamedTuple):
    """What the probes cost the script's process, measured in it: the hot hooks' own time, a
    rarer hook's price per call (calibrated on this machine as the session opened), how many
    calls, the CPU of the thread that writes the events, the step-boundary probes' short calls,
    timed as they ran, and when the process's first statement ran and the script's first line did
    (between them gpubottle's imports, its probes installed, the calibration; 0 where not known)."""

    per_call_s: float
    calls: int
    writer_cpu_s: float
    step_probes_s: float = 0.0
    began_t: float = 0.0
    script_t: float = 0.0
    # The hot hooks' own time (each fetch, backward, optimizer step), as they timed it, and the
    # records they emitted; the other records are priced at per_call_s. Older runs: 0, 0 (and
    # per_call_s a fetch's price for every record).
    hooks_s: float = 0.0
    timed: int = 0
    # When the probes were installed, once the script imported torch (0, 0: not known, or before
    # the script's first line, where began_t..script_t holds it).
    installed_t0: float = 0.0
    installed_t1: float = 0.0
    # A full garbage collection run at the first step where one was due (probes/gc_phase.py).
    moved_gc_s: float = 0.0


class Probes(NamedTuple):
    """Which torch probes installed: name -> None when fine, else why not."""

    status: dict[str, Optional[str]]


class ProbeFailed(NamedTuple):
    """A probe or census that broke: missing evidence in the report, never a broken run."""

    probe: str
    reason: str


class CudaPeak(NamedTuple):
    t: float
    device: int
    allocated: int
    reserved: int


class CudaSample(NamedTuple):
    t: float
    step: int
    allocated: int
    reserved: int


class CudaDevices(NamedTuple):
    """The CUDA devices the script's torch holds memory on: CUDA index, UUID (torch's, without the
    GPU-/MIG- prefix NVML writes), name. How NVML's devices are matched to the run's."""

    devices: list[list[Any]]


class CudaEnd(NamedTuple):
    """The allocator's own counters when the script ended."""

    device: int
    peak_allocated: int
    peak_reserved: int
    total: int
    allocated: int
    reserved: int
    free: Optional[int]


class Oom(NamedTuple):
    message: str


class WindowStarted(NamedTuple):
    t: float
    step: int
    cuda: bool


class WindowSaved(NamedTuple):
    t: float
    path: str
    steps: int


class SyncSites(NamedTuple):
    steps: int
    sites: list[list[Any]]  # [file:line, calls per step, library call that synchronised, function]


class SnapshotSaved(NamedTuple):
    path: str


class CudaContents(NamedTuple):
    """What filled GPU memory at one moment: weights, gradients, optimizer state, the rest (the
    leak census is LeakCensus: tensors that pile up, host or GPU)."""

    moment: str  # step | oom
    step: int
    contents: dict[str, Any]


class DeviceMarks(NamedTuple):
    """The device's own clock (CUDA events on the current stream, resolved without synchronising):
    [kind, step, device seconds, host time] rows: when the device finished the work queued before
    the mark, on the device's clock from the first mark, and when the host recorded it (monotonic).
    Kind "s": a step boundary; "a" and "b": just before and just after a DataLoader fetch; "z": at
    the script's end, once the device has run everything; `step`: the steps completed by then.
    `seen`, `skipped`, `spent_s`: so far, the steps it timed, those it left unseen to keep to its
    budget, and its own time counted against it (probes/device_clock.py)."""

    marks: list[list[Any]]
    seen: int = 0
    skipped: int = 0
    spent_s: float = 0.0


class Perturbed(NamedTuple):
    """Our own heavier probes ran in [t0, t1]: steps overlapping it are left out of statistics."""

    t0: float
    t1: float
    what: str


class Unhooked(NamedTuple):
    """`steps` optimizer steps ran with the hot hooks off, from t0 to t1 (the last one's end), to
    measure what the hooks cost in place (probes/unhooked.py): counted, not recorded. `aborted`: an
    epoch or an evaluation pass began, the block ended early (its steps count, not its time).
    `sparse`: one of the blocks that run the steps from 15 s on (or sooner), not a measurement;
    `every`: the hooks then ran on one step in this many (older runs: 10)."""

    t0: float
    t1: float
    steps: int
    aborted: bool = False
    sparse: bool = False
    every: Optional[int] = None


class LeakCensus(NamedTuple):
    n: int
    step: int
    t: float
    cost_s: float
    groups: list[list[Any]]  # [shape dtype device, bytes, count]
    holder: Optional[str]
    graph: Optional[str] = None  # where no container holds the grown tensors: the group of tensors
    # with an autograd graph (grad_fn) that grew, whose graphs keep them; `holder` holds those
    # glibc malloc's own account at the census (probes/malloc_stats.heap_stats): [heap, mapped,
    # in use, free] bytes, and 1 where they are modulo 2**32 (mallinfo); None where there is none
    heap: Optional[list[int]] = None
    # deques with a maxlen, not yet full, that drive memory (probes/buffers.filling): [holder,
    # items, maxlen, bytes an item]; and datasets' caches by sample index that grew
    # (probes/kept.bounded_containers): [holder, items, len(dataset), bytes an item, "dataset",
    # items at the first census]; lists their class keeps below a number (probes/kept.py,
    # capacity.py): [holder, items, that number, bytes an item, "capacity", items at the first
    # census or None, "Class.attribute"]
    filling: Optional[list[list[Any]]] = None
    # the script's own list, dict or deque whose items grew most since the first census
    # (probes/kept.py): [name, items, items added, bytes an item, what an item is]
    kept: Optional[list[Any]] = None
    # the tensor with the largest autograd graph (probes/graph_growth.py): [nodes, 1 where the walk
    # stopped at its cap, its shape dtype device, what holds it, file:line that adds to it, 1 where
    # it holds the first census's largest graph]; the holder and line only where it grew since
    chain: Optional[list[Any]] = None


class Subnormals(NamedTuple):
    """One look at the optimizers' CPU tensors for subnormal values (probes/subnormals.py): per kind
    (parameters, gradients, each state key such as exp_avg), the elements sampled and how many were
    subnormal."""

    t: float
    step: int
    groups: list[list[Any]]  # [kind, sampled, subnormal]
    cost_s: float
    # How much slower this CPU multiplies subnormal float32s (probes/subnormals.subnormal_penalty),
    # timed at the first look that found some; None before, or where it could not tell.
    penalty: Optional[float] = None


# --- the supervisor -> samples.jsonl -------------------------------------------------------------


class CpuSample(NamedTuple):
    t: float
    cores: dict[str, float]  # pid -> cores busy since the last sample (all its threads)
    busy: Optional[float]  # busy cores machine-wide
    iowait: Optional[float]
    run_queue: dict[str, float]  # pid -> fraction of time its main thread was runnable, not running
    main_thread: Optional[dict[str, float]] = None  # pid -> fraction of time its main thread ran


class MemSample(NamedTuple):
    t: float
    procs: dict[str, list[int]]  # pid -> [pss, uss]
    available: int
    total: int
    swap: int
    cgroup_current: Optional[int]
    cgroup_limit: Optional[int]
    load1: Optional[float]


class OutsideSample(NamedTuple):
    t: float
    cores: float  # cores used by processes outside the run
    top: list[list[Any]]  # [pid, name, cores]
    helpers: float  # gpubottle's own helpers (py-spy)


class OwnSample(NamedTuple):
    t: float
    cores: float  # the supervisor's own CPU
    # Seconds so far the script's main thread, busy, was held blocked by the sampler's PSS reads
    # (smaps_rollup's walk holds the lock its allocations take): a cost to the run beyond their CPU.
    stalled_s: Optional[float] = None


class ThreadsCpu(NamedTuple):
    """CPU seconds so far of the script's process's threads (every THREADS_EVERY_S), those that
    ran since the last reading (the first: all): a Python thread that spins holds the interpreter
    lock the training needs (analysis/gil.py)."""

    t: float
    pid: int
    cpu: dict[str, float]  # native thread id -> its CPU seconds so far


class ProcSeen(NamedTuple):
    pid: int
    ppid: int
    name: str
    cmdline: str
    t: float


# --- NVML -> gpu.jsonl, py-spy chunks -> stacks/chunks.jsonl -----------------------------------


class GpuDevices(NamedTuple):
    devices: list[dict[str, Any]]  # key, index, mig, uuid, name, metrics
    skipped: Optional[list[str]] = None  # devices NVML would not open: "GPU 3: Insufficient Permissions"
    note: Optional[str] = None  # why all devices were sampled although CUDA_VISIBLE_DEVICES is set


class GpuSample(NamedTuple):
    t: float
    devices: list[list[Any]]  # [key, {metric: value}] (key: the device's in GpuDevices; index before)


class StackChunk(NamedTuple):
    name: str
    t0: float
    t1: float
    rate: float
    pid: Optional[int] = None  # the process py-spy sampled (None: one py-spy over the whole tree)


class Recompiles(NamedTuple):
    """torch.compile's recompilations, read once at the script's end from dynamo's own record of
    the guards that failed (torch._dynamo.utils.guard_failures): per compiled function that was
    compiled again, [its name, its place, how many times, the first reason dynamo gave]."""

    t: float
    functions: list[list[Any]]


Record = Union[
    Start, RankStart, End, Stop, TorchInfo, ThreadsSet, LoaderBuilt, IterStarted, Batch, BatchLeaves,
    OptimizerBuilt,
    OptimizerStep, Saved, ModeSet, EvalForward, EvalCalls, ModelCalls, ProbeCost,
    Backward, Probes, ProbeFailed, CudaPeak, CudaSample, CudaDevices, CudaEnd, Oom, WindowStarted,
    WindowSaved, SyncSites, SnapshotSaved, CudaContents, Perturbed, LeakCensus, CpuSample, MemSample,
    OutsideSample, OwnSample, ThreadsCpu, ProcSeen, GpuDevices, GpuSample, StackChunk, DebugSwitch,
    MathMode, Subnormals, Unhooked, ZeroGrads, Checkpointed, Recompiles,
]

TAGS: dict[type, str] = {
    Start: "start", RankStart: "rank", End: "end", Stop: "stop", TorchInfo: "torch", ThreadsSet: "threads",
    LoaderBuilt: "loader", BatchLeaves: "leaves",
    IterStarted: "iter", Batch: "b", OptimizerBuilt: "opt", OptimizerStep: "o", Backward: "w",
    Saved: "save", ModeSet: "mode", EvalForward: "evfwd", EvalCalls: "evcalls", ModelCalls: "mcalls",
    ProbeCost: "cost",
    Probes: "collectors", ProbeFailed: "failed", CudaPeak: "cmem", CudaSample: "cmem_t",
    CudaDevices: "cdev", CudaEnd: "cmem_end", Oom: "oom", WindowStarted: "window_start",
    WindowSaved: "window_saved",
    SyncSites: "syncs", SnapshotSaved: "snapshot", Perturbed: "perturb", DeviceMarks: "dev",
    CudaContents: "census",  # the tag it had before its rename: older run directories still read
    LeakCensus: "leak", CpuSample: "c", MemSample: "m", OutsideSample: "x", OwnSample: "s",
    ThreadsCpu: "tc", ProcSeen: "p", GpuDevices: "gdev", GpuSample: "g", StackChunk: "chunk",
    DebugSwitch: "debug", MathMode: "math", Subnormals: "subn", Unhooked: "unhooked", ZeroGrads: "zgrads",
    Checkpointed: "ckpt", Recompiles: "recompiles",
}
BY_TAG: dict[str, type] = {tag: cls for cls, tag in TAGS.items()}


def encode(rec: Any) -> str:
    """One line (without the newline) for a record."""
    return json.dumps([TAGS[type(rec)], *rec], separators=(",", ":"))


def encode_lines(records: list[Any]) -> bytes:
    """Newline-terminated lines for many records at once; a record that cannot be encoded (a value
    JSON cannot hold) is dropped, the others kept."""
    if ENCODER is not None:  # msgspec's, where it imports (jsonio)
        try:
            data: bytes = ENCODER.encode_lines([(TAGS[type(r)], *r) for r in records])
            return data
        except (TypeError, ValueError, KeyError):
            pass  # find the one that failed, below
    out = []
    for r in records:
        try:
            out.append(encode(r) + "\n")
        except (TypeError, ValueError, KeyError):
            continue
    return "".join(out).encode()


def decode(raw: Any) -> Any:
    """The record a decoded JSON line holds; None for a tag this version does not know.
    Raises ValueError for a line that is not a record (too short, not an array)."""
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
        raise ValueError("not a record")
    cls = BY_TAG.get(raw[0])
    if cls is None:
        return None
    fields = raw[1:]
    n = len(cls._fields)  # type: ignore[attr-defined]
    required = n - len(cls._field_defaults)  # type: ignore[attr-defined]
    if len(fields) < required:
        raise ValueError(f"{raw[0]}: {len(fields)} fields, needs {required}")
    return cls(*fields[:n])


def decode_line(line: bytes | str) -> Any:
    """decode(jsonio.loads(line)); ValueError for a line that is not valid JSON or not a record."""
    try:
        raw = loads(line)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    return decode(raw)


def read_records(path: str) -> tuple[list[Any], int]:
    """Every record in a .jsonl file and the number of lines that could not be read (a line cut
    short by a crash, say). A missing file has no records."""
    out: list[Any] = []
    bad = 0
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return out, 0
    with fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = decode_line(line)
            except ValueError:
                bad += 1
                continue
            if rec is not None:
                out.append(rec)
    return out, bad
