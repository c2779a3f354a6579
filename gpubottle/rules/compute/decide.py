"""Whether a CPU loop that does not wait for data is compute-bound, how much of it the stacks pin on
the model (forward, backward, optimizer) or on the loop's own code outside it (loop-overhead), and
which thread settings to change."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubottle import vocabulary as v
from gpubottle.analysis.forward_loops import FUSED
from gpubottle.analysis.forward_rows import PYTHON_FILLS
from gpubottle.analysis.work_kinds import remedy
from gpubottle.evidence import (
    BackwardAgain,
    BagLookups,
    CallSite,
    CellLoop,
    CheckpointRecompute,
    CpuEvidence,
    DenseTable,
    Evidence,
    InnerPerSample,
    LoaderInfo,
    Measured,
    ModelCallCount,
    OptimizerWork,
    ParamPenalty,
    Scripted,
    SiblingModules,
    SliceLoss,
    SparseInput,
    StackFrameShare,
    UntrainedGrads,
)
from gpubottle.evidence.account import INFERENCE, TRAIN
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import (
    background_wait,
    batches_a_step,
    enough_steps,
    entry,
    gathered_batches,
    gpu_sets_pace,
    main_loader,
    model_names,
    scripted,
    uses_gpu,
)
from gpubottle.rules.compute.emulated import fp16_emulated
from gpubottle.rules.compute.siblings import said
from gpubottle.rules.compute.slice_loss import said as slice_said
from gpubottle.rules.compute.sparse_input import said as mostly_zeros
from gpubottle.rules.contention.gil import decide_gil

# What a compute-bound verdict leaves open (None: nothing).
NO_LOADER = "no-loader"  # no DataLoader and too few stacks: the script's own batch-making is in it
UNPINNED = "unpinned"  # enough stacks, but the model holds less than MODEL_SHARE_TOLD of them
FEW_SAMPLES = "few-samples"  # too few stacks to tell the model from the loop's own code

MODEL_PHASES = ("forward", "backward", "optimizer")


def _loop_thread_works(c: CpuEvidence, w: Measured, compute_cpu: float) -> bool:
    """The loop's own thread is on a CPU, or waiting for one, most of the time it does not wait for
    data: it computes (Python, or torch ops it runs and waits on). Judged by that thread alone, so
    a single-threaded Python loop counts as much as one that fills every core, and other programs
    taking the cores (the thread then waits in the run queue) do not make a busy loop look idle."""
    if c.main_thread_cores is not None and w.total_s > w.wait_s:
        ran = (c.main_thread_cores * w.total_s - (w.wait_cpu_s or 0.0)) / (w.total_s - w.wait_s)
        return ran + (c.main_run_queue or 0.0) >= th.COMPUTE_MAIN_BUSY
    # Older evidence, without the main thread: the process against torch's threads and the cores.
    bounds = [float(x) for x in (c.torch_threads, c.cores_available, c.cores_logical) if x]
    return compute_cpu >= th.COMPUTE_MAIN_BUSY * (min(bounds) if bounds else 1.0)


def overhead(ev: Evidence, least: float = th.LOOP_OVERHEAD_SHARE) -> StackFrameShare | None:
    """The user function outside the model (forward, backward, optimizer, data) that takes the
    largest share of the main thread in the measured steps, when it takes `least` or more (by
    default: enough to set the loop's pace)."""
    st = ev.stacks
    if st is None or not st.main_outside_model or st.samples_main < th.LOOP_OVERHEAD_MIN_SAMPLES:
        return None
    top = st.main_outside_model[0]
    return top if top.share >= least else None


def model_share(ev: Evidence) -> float:
    """Share of the main thread's stack samples in the model's forward, backward and optimizer."""
    phases = (ev.stacks.main_phases or {}) if ev.stacks is not None else {}
    return sum(phases.get(k, 0.0) for k in MODEL_PHASES)


@dataclass
class LoopOverhead:
    top: StackFrameShare  # the function outside the model that takes the most
    also: list[StackFrameShare]  # the next ones worth naming
    model_share: float
    samples_main: int
    every: int  # call it every this many steps instead
    step_s: float
    new_step_s: float  # the step if it ran every `every` steps
    ran: float | None = None  # the loop's thread was on a core this share of the steps, where it
    # was off one (not even waiting for a core) for most of the function's share: it waits
    inference: bool = False  # the steps are an inference loop's batches (no backward, no optimizer)
    # A loss computed row by row: its share with the backward of the nodes its ops recorded.
    with_backward: float | None = None

    @property
    def share(self) -> float:
        return max(self.top.share, self.with_backward or 0.0)


def _waits(ev: Evidence, w: Measured, top: StackFrameShare) -> float | None:
    """The loop's thread's share of the steps on a core, where the function's share cannot have
    been CPU work: off a core (sleeping, a network or disk call, a lock), not queued for one, for
    at least half of the function's share of the step (beyond its wait for data)."""
    c = ev.cpu
    if c is None or c.main_thread_cores is None:
        return None
    off = 1.0 - c.main_thread_cores - (c.main_run_queue or 0.0) - w.wait_share
    return c.main_thread_cores if off >= th.LOOP_OVERHEAD_WAITS * top.share else None


def decide_loop_overhead(ev: Evidence) -> LoopOverhead | None:
    w = ev.measured()
    top = overhead(ev, th.LOOP_OVERHEAD_KNOWN_SHARE)
    st = ev.stacks
    if w is None or top is None or st is None or not enough_steps(ev, w):
        return None
    if top.share < th.LOOP_OVERHEAD_INFO_SHARE and (top.kind is None or remedy(top.kind) is None):
        return None  # (a small share is said only where its kind's remedy names the change)
    if gpu_sets_pace(ev) is not None:
        return None  # the host waits for the GPU wherever its samples fall: that is not its cost
    n = th.LOOP_OVERHEAD_EVERY
    also = [o for o in st.main_outside_model[1:3] if o.share >= th.HOT_FUNCTION_ALSO]
    return LoopOverhead(top, also, model_share(ev), st.samples_main, n, w.mean_step_s,
                        w.mean_step_s * (1 - top.share * (1 - 1 / n)), _waits(ev, w, top),
                        not ev.steps.training_clock, _loss_rows_backward(ev, top))


def _loss_rows_backward(ev: Evidence, top: StackFrameShare) -> float | None:
    """A loss computed in a Python loop over rows (a similarity matrix filled pair by pair): each
    op the loop runs is a node of the graph backward then runs one at a time, so backward's share
    is counted with it in proportion to its part of the graph's forward (the model's forward and
    the loop). None where it is no such loop or backward was not sampled."""
    phases = (ev.stacks.main_phases or {}) if ev.stacks is not None else {}
    backward = phases.get("backward", 0.0)
    if not (top.loss and top.row_loop) or backward <= 0:
        return None
    return round(forward_loop_cost(top.share, phases.get("forward", 0.0) + top.share, backward), 4)


def padded_per_batch(lo: LoaderInfo) -> bool:
    """Padded to each batch's own longest sample: its first batches' padded lengths differ."""
    return len(set(lo.padded_lengths)) > 1


@dataclass
class Wasted:
    """Work the step does that one change removes (each from the counted step's records, or the
    loader's padding): on a CPU or a GPU alike."""

    repeat: ModelCallCount | None = None
    untrained: list[UntrainedGrads] = field(default_factory=list)
    again: BackwardAgain | None = None
    padded: LoaderInfo | None = None
    per_sample_inner: InnerPerSample | None = None
    cell_loop: CellLoop | None = None
    recompute: CheckpointRecompute | None = None  # checkpointed forwards backward runs again
    memory: tuple[int, int] | None = None  # the run's peak memory and what it may use (GPU or host)
    penalty: ParamPenalty | None = None  # a penalty over the parameters, tensor by tensor
    penalty_share: float = 0.0  # its forward's share of the mean step
    penalty_optimizer: OptimizerWork | None = None  # where its weight_decay would go
    attention: StackFrameShare | None = None  # attention weights computed and dropped
    hand_attention: StackFrameShare | None = None  # attention by hand: scores and probabilities kept
    onehot: StackFrameShare | None = None  # an embedding lookup as a one-hot matrix product
    siblings: SiblingModules | None = None  # many alike modules called one by one from one line
    sparse: SparseInput | None = None  # an argument almost all zeros, multiplied dense
    bag: BagLookups | None = None  # an embedding looked up and reduced one sample at a time
    slices: SliceLoss | None = None  # a loss over the output's slices one by one, summed


@dataclass
class Compute:
    share: float  # of step time not waiting for input
    step_s: float
    n: int  # measured steps
    compute_cpu: float  # cores the main process keeps busy while computing
    cores_available: float | None
    told: bool  # the stacks put MODEL_SHARE_TOLD or more in the model: "the model's own computation"
    model_share: float
    samples_main: int | None  # the main thread's stack samples (None: no stacks)
    overhead: StackFrameShare | None  # the loop's own code sets the pace (loop-overhead says it)
    # Below the pace-setting share, the loop's own code said beside the verdict (loop-overhead, info).
    aside: StackFrameShare | None = None
    threads_to_cores: tuple[int, int] | None = None  # more math threads than cores: from -> to
    threads_site: str | None = None
    threads_up: tuple[int, int] | None = None  # fewer math threads than cores, all busy: from -> to
    threads_env: str | None = None  # the thread variable set in the environment (OMP_NUM_THREADS=1)
    question: str | None = None  # what stays open (the constants above)
    bf16: bool | None = None  # the CPU computes bfloat16 natively (None: unknown)
    small_batch: tuple[int, str | None] | None = None  # batch_size and the DataLoader's line
    accumulated: int = 1  # the small batches each optimizer step takes (gradient accumulation)
    autocast: str | None = None  # CPU autocast the script uses, as said ("autocast to bfloat16 at ...")
    compiled: str | None = None  # the line that called torch.compile
    float64: bool = False  # most of the optimized parameters are float64
    # The math runs in float16 on a CPU without float16 instructions (emulated-math): the
    # autocast's line, or emulated.PARAMS_FP16
    fp16_emulated: str | None = None
    inference: bool = False  # the loop trains nothing (the account's steps are an inference loop's)
    autograd_loop: StackFrameShare | None = None  # a custom Function's Python loop: its share, line
    # A row-by-row loop of the model's forward (its share of the samples), and the share of them
    # its forward and the backward of what it recorded hold together (forward_loop_cost)
    forward_loop: StackFrameShare | None = None
    # A module run without gradients on many more rows than the training's calls (no_grad_call),
    # with those calls' rows and the counted step's seconds
    no_grad: tuple[CallSite, int, float] | None = None
    forward_loop_cost: float = 0.0
    backward_share: float = 0.0  # of the main thread's samples
    hook: StackFrameShare | None = None  # a hook the script registered: its share, def, registration
    optimizer: OptimizerWork | None = None  # its step is a large share, and a faster one exists
    table: DenseTable | None = None  # an embedding table updated whole for a few rows looked up
    # ...and the optimizer's other tables read as sparsely (a recommender's user and item tables)
    more_tables: list[DenseTable] = field(default_factory=list)
    table_optimizer: str | None = None  # where that optimizer is built
    per_sample: ModelCallCount | None = None  # the model called once per sample, in a Python loop
    waste: Wasted = field(default_factory=Wasted)  # work one change removes (wasted_work)
    model_names: list[str] | None = None  # the script's names for the modules the step calls
    scripted: Scripted | None = None  # the module the step calls is TorchScript
    double_backward: str | None = None  # a line differentiating a gradient again (create_graph=True)
    conv2d: bool = False  # the forward is mostly Conv2d, not in channels_last: it is a try

    @property
    def optimizer_share(self) -> float:
        """The optimizer's step, of the mean step."""
        return self.optimizer.step_s / self.step_s if self.optimizer is not None and self.step_s else 0.0


def no_grad_call(mc: ModelCallCount | None) -> tuple[CallSite, int, float] | None:
    """The line of the counted step that ran a module without gradients on NO_GRAD_ROWS_RATIO times
    the rows of the training's own calls (those with autograd on) or more, for NO_GRAD_CALL_SHARE of
    the step or more: (it, the training's rows, the step's seconds). None in a loop with no call
    under autograd (an inference loop: its calls are the work)."""
    if mc is None or not mc.counted_s:
        return None
    train = max((c.rows for c in mc.sites if c.grad), default=0)
    off = [c for c in mc.sites if not c.grad and c.rows >= th.NO_GRAD_ROWS_RATIO * max(train, 1)]
    top = max(off, key=lambda c: c.seconds, default=None)
    if not train or top is None or top.seconds < th.NO_GRAD_CALL_SHARE * mc.counted_s:
        return None
    return top, train, mc.counted_s


def forward_loop_cost(loop: float, forward: float, backward: float) -> float:
    """A forward loop's share of the samples (`loop`, of all) with the backward of what it recorded:
    backward's share in proportion to the loop's part of the forward (a backward's samples are its
    engine's C++, not the ops': the nodes it runs are the forward's ops)."""
    return loop + backward * min(1.0, loop / forward) if forward > 0 else loop


def slow_optimizer(ev: Evidence, step_s: float) -> OptimizerWork | None:
    """The optimizer's step, when it takes OPTIMIZER_LOOP_SHARE of the step or more and torch has a
    faster implementation for it: fused where it can fuse, else foreach for a per-tensor loop."""
    o = ev.optimizer_work
    if o is None or step_s <= 0 or o.step_s < th.OPTIMIZER_LOOP_SHARE * step_s:
        return None
    if (o.impl == v.OPT_FOREACH and o.can_fuse) or o.impl == v.OPT_FOR_LOOP:
        return o
    return None


def dense_table(ev: Evidence, step_s: float) -> DenseTable | None:
    """An embedding table with a dense gradient holding most of its optimizer's parameters, of which
    a step reads a few rows, where the optimizer's step is a large share of the step, or the
    backward and the optimizer together are: the dense gradient is a whole table made and zeroed
    in backward at every step, which SGD's one pass over it does not outweigh (a 200,000 + 100,000
    x 64 recommender under SGD: the optimizer 21% of the step, backward 49%; 19.2 s -> 5.7 s
    with sparse=True)."""
    calls, o = ev.model_calls, ev.optimizer_work
    if calls is None or o is None or step_s <= 0:
        return None
    train = entry(ev, TRAIN)
    updates = (train.parts.get("backward", 0.0) + train.parts.get("optimizer", 0.0)) / train.seconds \
        if train is not None and train.seconds > 0 else 0.0
    if o.step_s < th.OPTIMIZER_LOOP_SHARE * step_s and updates < th.DENSE_TABLE_UPDATES_SHARE:
        return None
    return next((t for t in calls.tables if t.share >= th.DENSE_TABLE_SHARE and read_sparsely(t)), None)


def read_sparsely(t: DenseTable) -> bool:
    """A step's lookups read a few of the table's rows (its dense gradient fills all of them)."""
    return t.touched <= th.DENSE_TABLE_TOUCHED * t.rows


def forward_loops(calls: ModelCallCount | None) -> tuple[InnerPerSample | None, CellLoop | None]:
    """Python loops in the model's forward that one call would replace (on a CPU or a GPU alike): a
    submodule called once per sample, and an RNN cell stepped over a sequence made before the loop
    whose forwards take CELL_LOOP_FORWARD_SHARE of the step."""
    if calls is None:
        return None, None
    return (next((p for p in calls.per_sample_inner if p.calls >= th.PER_SAMPLE_CALLS_MIN), None),
            next((c for c in calls.cells if c.sequence is not None and c.cell in FUSED
                  and (c.forward_share or 0.0) >= th.CELL_LOOP_FORWARD_SHARE), None))


def wasted_work(ev: Evidence) -> Wasted:
    out = Wasted()
    calls = ev.model_calls
    if calls is not None:
        # (its weights changed in between and its result backpropagated: a forward of its own)
        out.repeat = calls if calls.repeat and not (calls.repeat_updated and calls.repeat_backward) else None
        # (one no part of the model is untrained-layer's: rules/compute/untrained_layers.py)
        out.untrained = [u for u in calls.untrained if not (u.built or u.unregistered)
                         and u.elements >= th.UNTRAINED_GRAD_SHARE * u.trained]
        a = calls.again
        if a is not None and a.passes > a.calls and (a.backward_share or 0.0) >= th.BACKWARD_AGAIN_SHARE:
            out.again = a
        out.per_sample_inner, out.cell_loop = forward_loops(calls)
        out.siblings = said(calls.siblings)
        out.sparse = mostly_zeros(calls.sparse)
        out.bag = next(iter(calls.bags), None)
        out.slices = slice_said(calls.slice_loss)
    att = ev.stacks.main_attention if ev.stacks is not None else None
    if att is not None and att.share >= th.ATTENTION_WEIGHTS_SHARE:
        out.attention = att
    hand = ev.stacks.main_hand_attention if ev.stacks is not None else None
    if hand is not None and hand.share >= th.HAND_ATTENTION_SHARE:
        out.hand_attention = hand
    onehot = ev.stacks.main_onehot if ev.stacks is not None else None
    if onehot is not None and onehot.share >= th.ONEHOT_LOOKUP_SHARE:
        out.onehot = onehot
    lo = main_loader(ev)
    # (an RNN fed packed sequences skips their padding: the embedding before it is all that sees it)
    if lo is not None and lo.batch_padding and ev.packs_sequences is None and lo.batch_padding[0] >= (
            th.PER_BATCH_PADDING_SHARE if padded_per_batch(lo) else th.PADDING_SHARE):
        out.padded = lo
    r = ev.recompute
    if r is not None and r.share >= th.CHECKPOINT_RECOMPUTE_SHARE:
        out.recompute = r
        out.memory = _peak_and_limit(ev)
    p = calls.penalty if calls is not None else None
    quick = _quick_step(ev) if p is not None else None
    if p is not None and quick and p.forward_s / quick >= th.PARAM_PENALTY_FORWARD_SHARE:
        out.penalty, out.penalty_share = p, p.forward_s / quick
        out.penalty_optimizer = ev.optimizer_work
    return out


def _quick_step(ev: Evidence) -> float | None:
    """The measured steps' 10th percentile: what one counted step's timing compares with, since on
    a machine other programs load the mean stretches while that step may have run unhindered (an
    L2 penalty's 0.33 ms forward: 1.3% of the loaded mean of 25 ms, 2.8% of its quick steps' 11.9,
    4.5% quiet)."""
    d = sorted(ev.measured_durations())
    return d[len(d) // 10] if d else None


def _peak_and_limit(ev: Evidence) -> tuple[int, int] | None:
    """The memory checkpointing saves comes from: the GPU's where the run used one, else the host's."""
    g, h = ev.cuda_memory, ev.memory
    if g is not None and g.peak_reserved_bytes and g.total_bytes:
        return g.peak_reserved_bytes, g.total_bytes
    if h is not None and h.peak_tree_bytes and (h.limit_bytes or h.total_bytes):
        return h.peak_tree_bytes, int(h.limit_bytes or h.total_bytes or 0)
    return None


def decide_compute(ev: Evidence) -> Compute | None:
    w = ev.measured()
    if w is None or not enough_steps(ev, w):
        return None
    # Without a DataLoader, batches come from the script's own code: only stack samples measure them.
    wait_known = main_loader(ev) is not None or (
        ev.stacks is not None and ev.stacks.samples_main >= th.MIN_STACK_SAMPLES)
    st = ev.stacks
    if st is not None and st.samples_main >= th.MIN_STACK_SAMPLES and max(
            st.main_loop_input_share or 0.0, st.main_wait_share or 0.0) >= th.INPUT_WAIT_WARNING:
        # The loop's own batch-making, or its wait for a producer's: the input rules speak, with
        # enough stacks to measure it (with fewer it says nothing, and the loop stays
        # compute-bound with the question open).
        return None
    if w.wait_share >= th.INPUT_WAIT_WARNING and th.input_wait_counts(w.wait_share, w.mean_wait_s):
        # Input-bound: the input rules speak for this run. Where the main process makes the batches
        # itself and computes most of the step, the two add up: the compute's own fixes (a penalty
        # given to the optimizer, 16% of a step that waited 17-18% for a TensorDataset's fetches)
        # are said beside it, as info (the input finding leads).
        lo = main_loader(ev)
        if lo is None or lo.num_workers or 1.0 - w.wait_share < th.COMPUTE_BESIDE_INPUT:
            return None
    if (background_wait(ev, w) or 0.0) >= th.INPUT_WAIT_WARNING:
        return None  # it waits for a background thread's batches: the input rules speak
    c = ev.cpu
    if uses_gpu(ev) or c is None or c.main_cores is None or w.total_s <= w.wait_s:
        return None  # a GPU run: the GPU rules decide compute-bound
    # The main process's CPU while it is not waiting for input (all its threads).
    compute_cpu = (c.main_cores * w.total_s - (w.wait_cpu_s or 0.0)) / (w.total_s - w.wait_s)
    if not _loop_thread_works(c, w, compute_cpu):
        return None  # the loop neither waits for data nor computes on the CPU: not ours to claim
    gil = decide_gil(ev)
    if gil is not None and gil.startup_s is None:
        return None  # its ops wait for the lock another thread holds: gil-contention speaks
    # "The model's own computation" is what the stacks show under forward, backward and the
    # optimizer: without enough of them (py-spy off, denied, or starved of CPU on a busy machine)
    # the loop's other code cannot be told apart, and the finding says so.
    enough = st is not None and st.samples_main >= th.LOOP_OVERHEAD_MIN_SAMPLES
    model = model_share(ev)
    told = enough and model >= th.MODEL_SHARE_TOLD
    avail = c.cores_available
    d = Compute(1.0 - w.wait_share, w.mean_step_s, w.n, compute_cpu, avail, told, model,
                st.samples_main if st is not None else None, overhead(ev), bf16=c.bf16,
                float64=ev.params_dtype == "float64",
                model_names=model_names(ev), scripted=scripted(ev), double_backward=ev.double_backward,
                inference=any(e.phase == TRAIN and e.what == INFERENCE for e in ev.account))
    if d.overhead is None:
        d.aside = overhead(ev, th.LOOP_OVERHEAD_INFO_SHARE)
    if st is not None and st.main_autograd_loop is not None and (
            st.main_autograd_loop.share >= th.AUTOGRAD_LOOP_SHARE):
        d.autograd_loop = st.main_autograd_loop
    if st is not None and st.main_forward_loop is not None and st.main_forward_loop.kind in PYTHON_FILLS:
        if st.main_forward_loop.share >= th.FORWARD_FILL_SHARE:  # (its writes record no nodes)
            d.forward_loop, d.forward_loop_cost = st.main_forward_loop, st.main_forward_loop.share
    elif st is not None and st.main_forward_loop is not None:
        phases = st.main_phases or {}
        cost = forward_loop_cost(st.main_forward_loop.share, phases.get("forward", 0.0),
                                 phases.get("backward", 0.0))
        if cost >= th.FORWARD_LOOP_SHARE:
            d.forward_loop, d.forward_loop_cost = st.main_forward_loop, cost
            d.backward_share = phases.get("backward", 0.0)
    d.no_grad = no_grad_call(ev.model_calls)
    if st is not None and st.main_hook is not None and st.main_hook.share >= th.HOOK_SHARE:
        d.hook = st.main_hook
    for m in ev.math_in_use:
        if m.kind == v.MATH_COMPILE and d.compiled is None:
            d.compiled = m.site or "a line not known"
        elif m.kind == v.MATH_AUTOCAST and m.detail.startswith("cpu ") and d.autocast is None:
            d.autocast = f"autocast to {m.detail.split()[-1]} at {m.site or 'a line not known'}"
    d.fp16_emulated = fp16_emulated(ev)
    d.conv2d = (st is not None and (st.main_conv2d_share or 0.0) >= th.CONV2D_SHARE
                and (st.main_phases or {}).get("forward", 0.0) >= th.FORWARD_SHARE_CONV
                and ev.channels_last is None)
    if c.torch_threads and avail and avail >= 1 and c.torch_threads >= th.THREADS_OVER_CORES * avail:
        # More math threads than cores: they wait for each other at every parallel op. The first
        # fix for a loop whose time is the math (cpu-contention says where the setting comes from).
        d.threads_to_cores, d.threads_site = (c.torch_threads, max(1, int(avail))), c.threads_site
    if d.overhead is not None:  # faster math would not make this loop faster: its own code sets the pace
        return d
    calls = ev.model_calls
    d.waste = wasted_work(ev)
    slice_loop = d.waste.slices.site if d.waste.slices is not None else None
    if d.waste.cell_loop is not None or d.waste.per_sample_inner is not None or (
            d.forward_loop is not None and slice_loop in (d.forward_loop.location, d.forward_loop.row_loop)):
        # (an RNN cell stepped over time, a submodule called a sample at a time, a loss summed
        # slice by slice: their own fixes say the one call that replaces the loop, nn.LSTM, the
        # batched call, one loss over the whole output)
        d.forward_loop = None
    if calls is not None and calls.calls >= th.PER_SAMPLE_CALLS_MIN and calls.rows is not None \
            and calls.rows <= th.PER_SAMPLE_ROWS:
        d.per_sample = calls
    d.optimizer = slow_optimizer(ev, w.mean_step_s)
    d.table = dense_table(ev, w.mean_step_s)
    if d.table is not None and ev.model_calls is not None:
        d.more_tables = [t for t in ev.model_calls.tables if t is not d.table
                         and t.optimizer == d.table.optimizer and read_sparsely(t)]
    d.table_optimizer = ev.optimizer_work.site if ev.optimizer_work is not None else None
    lo = main_loader(ev)
    # (A step of several batches, gradients accumulated over them: each batch's own time.)
    accumulated = batches_a_step(ev, lo) if lo is not None else 1
    # (batches the loop gathers into one step's batch: that batch is the step's size)
    gathered = gathered_batches(ev, lo) if lo is not None else 1
    if lo is not None and lo.batch_size and lo.batch_size * gathered <= th.SMALL_BATCH_MAX \
            and w.mean_step_s / accumulated <= th.SMALL_BATCH_STEP_S:
        d.small_batch, d.accumulated = (int(lo.batch_size), lo.site), accumulated
    margin = th.THREADS_UNDER_CORES_MARGIN
    if (c.torch_threads and avail and c.torch_threads < avail - margin
            and compute_cpu < c.torch_threads + margin):
        d.threads_up = (c.torch_threads, int(avail))
        d.threads_site = c.threads_site
        d.threads_env = next((f"{k}={val}" for k, val in sorted(c.thread_env.items())
                              if val.strip() == str(c.torch_threads)), None)
    if not wait_known:
        d.question = NO_LOADER
    elif not told:
        d.question = UNPINNED if enough else FEW_SAMPLES
    return d
