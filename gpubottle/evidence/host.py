"""Evidence about the host side of a run: its DataLoaders, steps, CPU, memory and Python stacks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.clock import measured_indices
from gpubottle.serialisable import Serialisable


@dataclass
class LoaderInfo(Serialisable):
    """One torch DataLoader as the script configured it, and where."""

    id: int
    site: str | None = None  # file:line of the DataLoader(...) call in user code
    built_by: str | None = None  # a library's function that built it for the user (HF Trainer...)
    # A library's function that rebuilt the user's own DataLoader (accelerate's prepare, Lightning):
    # `site` and `sources` are then the user's DataLoader(...) call, where its arguments are written.
    rebuilt_by: str | None = None
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
    # Its __getitem__ gives the same sample every epoch (analysis/sample_random.py: it draws nothing
    # at random and keeps nothing on self); None: not known (it calls a transform it was given).
    same_every_epoch: bool | None = None
    # Its collate_fn's loop over the batch's samples, where that work is the same every epoch
    # (analysis/collate_samples.py): file:line and the loop's header as written
    collate_loop: str | None = None
    collate_loop_text: str | None = None
    # Python objects the dataset holds in lists, dicts and object arrays (probes/dataset_census.py):
    # what forked workers would copy as they read it. None: not read.
    dataset_objects: int | None = None
    iterable: bool | None = None
    shards: bool | None = None  # an IterableDataset that gives each worker its share of the stream
    sampler: str | None = None  # the sampler's class (RandomSampler, DistributedSampler, ...)
    # Each rank of a job takes its own share of the dataset (a DistributedSampler, a sampler or
    # IterableDataset that splits by rank); None where it cannot be told.
    rank_split: bool | None = None
    world: int | None = None  # torch.distributed's world size when the loader was built
    collate_fn: str | None = None
    worker_init: str | None = None  # the worker_init_fn each worker runs as it starts: "name (file:line)"
    worker_pids: list[int] = field(default_factory=list)
    batches: int = 0  # batches the training drew (evaluation passes' are eval_batches)
    fetch_s: float = 0.0  # the loop's time in those fetches, in all (not a background thread's)
    eval_batches: int = 0
    eval_passes: int = 0
    builds: int = 1  # DataLoader objects built at this site with this configuration (one per epoch?)
    iterators: int = 0  # how many times iteration (an epoch) started
    iter_site: str | None = None  # the user's line that started them most (a for loop, next(iter(...)))
    iter_cycled: bool = False  # an iterator started inside itertools.cycle(loader), which replays batches
    iter_build_s: float = 0.0  # seconds the training's iter() calls took (its workers starting)
    # Its training batches fetched on another thread than the loop's (a background prefetcher):
    # the median fetch, which the loop does not wait in but its producer spends per batch.
    off_loop_fetch_s: float | None = None
    first_batch_waits_s: list[float] = field(default_factory=list)  # wait for each epoch's first batch
    epoch_batches: list[int] = field(default_factory=list)  # batches of each epoch that ran to its end
    epoch_wait_s: list[float] = field(default_factory=list)  # ...and the loop's mean wait for one
    # Where each setting's value comes from in the user's code (probes/knobs.py): setting ->
    # {"kind": literal | variable | option | config | dataclass | env | global | default | expression, ...}
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Its first batch: the tensors in it and its other leaves (numbers, strings: each pickled apart
    # from a worker). None: not seen.
    batch_tensors: int | None = None
    batch_objects: int | None = None
    batch_bytes: int | None = None  # its tensors' bytes
    # Its most padded integer sequence tensor: [share of positions that are trailing padding,
    # length, median row's used length, longest row's] (probes/batch_leaves.padding). None: none.
    batch_padding: list[Any] | None = None
    padded_lengths: list[int] = field(default_factory=list)  # that tensor's length in its first batches
    # Batches fetched a sample at a time from a dataset that takes a batch's indices at once (a
    # TensorDataset, or Subsets of one) by torch's BatchSampler: one index a batch would do.
    batch_indexable: bool | None = None
    batch_sampler: str | None = None  # the class of a batch_sampler= the script passed (None: batch_size=)


@dataclass
class InPlaceCost(Serialisable):
    """What gpubottle's hooks cost a step in place, measured in the run by blocks of steps it ran
    without them (probes/unhooked.py, analysis/hooks_cost.py)."""

    per_step_s: float  # the median difference: a hooked step's time less an unhooked one's
    spread_s: float  # its standard error
    blocks: int  # the blocks it was measured over
    block_steps: int  # steps a block (median)
    hooked_steps: int  # the steps the hooks ran in
    step_s: float = 0.0  # a block's mean step (median over the blocks)
    own_s: float = 0.0  # the hooks' own time a hooked step, as they timed it
    # Whether it tells more than their own clocks: above them by twice its spread or more (other
    # programs sharing the cores, or a run of few blocks, make it vary more than that).
    resolved: bool = True


@dataclass
class StepEvidence(Serialisable):
    """Training steps as seen by the hooks in the script's process."""

    source: str  # optimizer | backward | dataloader | none; traces: profiler | trace-optimizer
    durations_s: list[float] = field(default_factory=list)  # every step, warm-up included
    input_wait_s: list[float] = field(default_factory=list)  # wait for batches within each step
    input_wait_cpu_s: list[float | None] = field(default_factory=list)  # main CPU while loading
    # ... and the loading thread's run-queue time in it: waiting for a core to take a ready batch
    input_wait_run_queue_s: list[float | None] = field(default_factory=list)
    # Of each step's input wait, what was DataLoader workers starting again (a new epoch's first
    # batch, beyond the usual wait): a cost of the loader's settings, not of loading.
    start_up_wait_s: list[float] = field(default_factory=list)
    warmup: int = 0  # leading steps left out of every statistic
    # Of each step, the seconds spent in evaluation passes and checkpoints (phases of their own in
    # the run's account): left out of its time in every step statistic.
    outside_s: list[float] = field(default_factory=list)
    outliers: list[int] = field(default_factory=list)  # indices of pauses (unexplained long steps)
    instrumented: list[int] = field(default_factory=list)  # steps slowed by our profiler/sync probes
    # Steps run with gpubottle's hooks off to measure what they cost (their one time is a block's
    # mean), and that measurement.
    unhooked: list[int] = field(default_factory=list)
    in_place: InPlaceCost | None = None
    thinned: int = 0  # of those, the steps the sparse hooks left out to keep their cost down
    thinned_from_s: float | None = None  # ...from this long after the script's process started
    thinned_every: int | None = None  # ...hooked one step in this many (None: an older run's 10)
    # The device's own clock (CUDA events; analysis/device_clock.py), per step, None where unseen:
    # its time on the device, the device's idle time waiting for input, and how far the device ran
    # behind the host at the step's end. Where they cover the measured steps, the step statistics
    # and the input share are the device's (Evidence.measured()).
    device_s: list[float | None] = field(default_factory=list)
    device_input_idle_s: list[float | None] = field(default_factory=list)
    device_lag_s: list[float | None] = field(default_factory=list)
    measured_from: float | None = None  # monotonic time of the first measured step's start
    measured_to: float | None = None  # ...and of the last step's end
    optimizers: int = 0
    backward_calls: int = 0
    batches: int = 0

    @property
    def training_clock(self) -> bool:
        """The steps are training steps (not an inference loop's batches)."""
        return self.source in ("optimizer", "backward", "profiler", "trace-optimizer")

    def measured_indices(self) -> list[int]:
        """Indices of the steps every statistic uses (see gpubottle/clock.py)."""
        return measured_indices(len(self.durations_s), self.warmup, self.instrumented, self.outliers,
                                self.unhooked)

    def hooked_count(self) -> int:
        """Steps whose batches, backward calls and optimizer steps were recorded (a per-step count
        of those divides by this)."""
        return len(self.durations_s) - len(self.unhooked)

    def paced(self) -> list[float]:
        """Each step's time on the device's clock where it has one, else the host's: the pace the
        run kept, also where the host ran ahead of the device."""
        dev = self.device_s
        return [dev[i] if i < len(dev) and dev[i] is not None else d  # type: ignore[misc]
                for i, d in enumerate(self.durations_s)]

    def net_durations(self) -> list[float]:
        """Each step's time (paced) less what it spent in evaluation and checkpoints."""
        paced = self.paced()
        if not self.outside_s:
            return paced
        return [max(0.0, d - o) for d, o in zip(paced, self.outside_s)]


@dataclass
class BusyThread(Serialisable):
    """A Python thread of the script's process besides the loop's own that used CPU over the
    measured steps (analysis/gil.py): running Python, it holds the interpreter lock the loop needs."""

    name: str  # threading's name for it ("Thread-1 (monitor)")
    cores: float  # its CPU over the measured steps
    busy_share: float  # of its stack samples, those not in a wait (a queue, a lock, a pipe)
    samples: int
    function: str | None = None  # the function most of its busy samples are in (the user's first)
    site: str | None = None  # the line most of those are at
    started: str | None = None  # the function it was started with (threading.Thread's target)
    startup_cores: float | None = None  # its CPU from the launch to the first step
    # Threads started with the same function (a pool: a threaded prefetcher's 16 workers) are one
    # entry: their CPU summed, their samples pooled, `name` the first one's.
    count: int = 1


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
    # Of the workers' CPU, the share in threads besides each worker's main one: torch computes on
    # one thread in a worker, so a native library's pool (numpy's BLAS, OpenCV) runs there
    workers_pool_share: float | None = None
    other_children_cores: float | None = None
    tree_cores: float | None = None
    system_cores: float | None = None  # busy cores machine-wide
    bf16: bool | None = None  # the CPU computes bfloat16 natively (AMX, AVX-512 BF16, Arm bf16)
    fp16: bool | None = None  # the CPU computes float16 natively (AVX-512 FP16, AMX-FP16)
    outside_cores: float | None = None  # busy cores used by processes outside the run
    top_outside: list[dict[str, Any]] = field(default_factory=list)
    iowait_fraction: float | None = None
    loadavg_1m: float | None = None
    main_threads: int | None = None
    torch_threads: int | None = None
    torch_interop_threads: int | None = None
    threads_site: str | None = None  # file:line where the script set torch's threads, if it did
    threads_source: dict[str, Any] | None = None  # where that value comes from (probes/knobs.py)
    thread_env: dict[str, str] = field(default_factory=dict)  # OMP_NUM_THREADS etc. as the script saw them
    supervisor_cores: float | None = None  # gpubottle's own sampling cost
    # The script's Python threads besides the loop's own that ran over the measured steps, busiest
    # first; and of the loop thread's stack samples there, the share in a wait (a DataLoader's
    # pipe, a queue, a lock): where it is neither that nor on a CPU, it waits for the GIL or in C.
    busy_threads: list[BusyThread] = field(default_factory=list)
    main_waiting_samples: float | None = None
    # The main thread's share of start-up (the launch to the first step) on a CPU and waiting for one
    startup_main_ran: float | None = None
    startup_main_queued: float | None = None


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
    graph: str | None = None  # no container holds them: the autograd graphs of tensors of this
    # shape (a loss kept with its grad_fn) do, and `holder` holds those


@dataclass
class HeapGrowth(Serialisable):
    """What glibc's malloc held at the first two tensor censuses (probes/malloc_stats.py): memory
    the run grew by that malloc keeps free (freed, not given back: fragmentation) or in use."""

    seconds: float  # between the two censuses
    steps: int
    heap_grown_bytes: int  # its arenas' size (the heap) plus what it mapped block by block
    free_grown_bytes: int  # free bytes inside its arenas
    used_grown_bytes: int  # bytes handed out, in the arenas or mapped
    free_bytes: int  # free in its arenas at the second census
    heap_bytes: int  # its arenas' size at the second census
    # Allocators that give freed memory back, found on the machine that ran it (LD_PRELOAD names)
    preloads: list[str] = field(default_factory=list)


@dataclass
class FillingBuffer(Serialisable):
    """A bounded buffer the script was filling at the last tensor census: a deque with a maxlen
    (probes/buffers.py), a dataset's cache by index or a list its class bounds (probes/kept.py):
    it grows until full, then drops (or overwrites) an item for each it adds."""

    holder: str  # 'memory (dqn.py, a module-level deque)'
    items: int
    maxlen: int
    item_bytes: int  # what one of its newest items holds
    t: float  # when the census counted it (the supervisor's clock)
    step: int
    items_per_s: float | None = None  # between two censuses that both counted it
    by_dataset: bool = False  # a dataset's cache by sample index: its bound is len(dataset)
    capacity: str | None = None  # a list its class keeps below this ('ReplayMemory.capacity')


@dataclass
class GraphGrowth(Serialisable):
    """A tensor the script holds whose autograd graph grew between the first two censuses
    (probes/graph_growth.py): a loss summed into a running total with its grad_fn keeps every
    step's graph."""

    holder: str  # 'running (a local Tensor in main, train.py)'
    label: str  # its shape, dtype and device
    nodes_before: int  # the largest graph's nodes at the first census
    nodes: int  # this one's at the second
    capped: bool  # the walk stopped at its cap: at least that many
    spans: bool  # it holds the first census's largest graph: one graph across the steps between
    steps: int
    seconds: float
    where: str | None = None  # file:line that adds to it


@dataclass
class KeptGrowth(Serialisable):
    """The script's own list, dict or deque whose items grew most between the first two censuses
    (probes/kept.py): numpy arrays, numbers or dicts as well as tensors."""

    holder: str  # 'preds (a local list in main, train.py)'
    items: int  # at the second census
    added: int
    item_bytes: int  # what one of its newest items holds
    item: str  # what an item is: 'a (256,) int64 numpy array'
    seconds: float
    steps: int

    @property
    def grown_bytes(self) -> int:
        return self.added * self.item_bytes


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
    growth_span_s: float | None = None  # the seconds the growth line was fitted over
    growth_tail_bytes_per_s: float | None = None  # the rise over that span's last third alone
    growth_with_workers: bool = False  # DataLoader workers ran beside those samples
    swap_used_peak_bytes: int | None = None
    swap_growth_bytes: int | None = None
    series: list[list[float]] = field(default_factory=list)  # [t, tree_bytes, available_bytes]
    leak: LeakEvidence | None = None
    heap: HeapGrowth | None = None  # glibc malloc's account of the growth between the censuses
    buffers: list[FillingBuffer] = field(default_factory=list)  # bounded buffers still filling
    censuses: int = 0  # looks at what the script's process holds (probes/leaks.py), at most two
    kept: KeptGrowth | None = None  # the script's container that grew most between them
    graph: GraphGrowth | None = None  # a tensor whose autograd graph grew between them
    # DataLoader workers' private memory (USS) over the measured steps: forked workers that copy
    # what they read (copy-on-read of Python objects) grow here while the main process stays flat.
    workers_growth_bytes_per_s: float | None = None
    workers_growth_r2: float | None = None
    workers_growth_span_s: float | None = None  # the seconds that line was fitted over
    workers_private_bytes: int | None = None  # at the last sample
    main_before_workers_bytes: int | None = None  # the main process before workers started
    per_worker_private_peak_bytes: int | None = None  # one worker's own memory (USS), at its highest


@dataclass
class StackFrameShare(Serialisable):
    function: str
    location: str  # file:line
    share: float  # fraction of the role's samples with this frame on the stack
    called_at: str | None = None  # the user's line that called it most (the loop's call of a helper)
    kind: str | None = None  # the kind of library work most of its samples are in (work_kinds.py)
    kind_share: float | None = None  # that kind's share of its samples (half or more)
    feeds_model: bool = False  # its call assigns what the loop's call of the model reads (x = aug(x))
    loss: bool = False  # what it returns reaches backward() and no model call: the loss, by hand
    accumulates: bool = False  # the loop adds its result up at every step (correct += f(...))
    # It reads what the model's call returned this step (an agent's action from its policy's logits)
    after_model: bool = False
    # No kind known, and most of its samples in library code under one of its statements ("`rng =
    # np.random.default_rng(1234 + i)` (data.py:13) and the numpy code it calls"): what its time
    # goes to, where "its own lines" would be untrue
    beneath: str | None = None
    # Most of its samples in a Python loop over a tensor's rows, one at a time (analysis/row_loops.py):
    # the loop's `for` (file:line) and its header
    row_loop: str | None = None
    row_loop_text: str | None = None
    row_loop_columns: bool = False  # the loop takes columns (`logits[:, c]`: a term a class)
    # A tensor's values made as Python numbers (forward_rows.VALUES_LOOP): the calls that make each
    # ("math.sin, math.cos"), or "comparisons" (a mask), or None where neither
    per_value: str | None = None


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
    # The DataLoader's sampler: the user's sampler code under torch's _next_index, which runs in the
    # main process for every batch whatever the workers; its share is of the main thread's samples
    # in the DataLoader (its waits for batches), not of all its samples.
    main_sampler: StackFrameShare | None = None
    # A custom torch.autograd.Function's forward or backward whose samples are mostly in a Python
    # loop of its own (analysis/autograd_functions.py): named at the loop, its share of main samples
    main_autograd_loop: StackFrameShare | None = None
    # A Python loop of the model's own forward computing one row at a time (analysis/forward_rows.py):
    # the function holding it, its `for` (location, row_loop), its header; its share of main samples
    main_forward_loop: StackFrameShare | None = None
    # A hook the script registered (a module's forward or backward hook, a tensor's) most sampled:
    # its def (location), its registration (called_at), its kind (analysis/module_hooks.py)
    main_hook: StackFrameShare | None = None
    # The user's line calling nn.MultiheadAttention without need_weights=False and dropping the weights
    # it returns (analysis/attention_weights.py): its share of main samples inside the attention
    main_attention: StackFrameShare | None = None
    # Attention written by hand in the model (analysis/hand_attention.py): its function, its softmax's
    # line, the share of main samples at its statements
    main_hand_attention: StackFrameShare | None = None
    # An embedding lookup written as F.one_hot(ids, V) times a weight (analysis/onehot_lookup.py)
    main_onehot: StackFrameShare | None = None
    main_conv2d_share: float | None = None  # main samples inside a Conv2d's forward
    # The user's line calling the module most samples are under, and the line in the loop around
    # it appending to the input it passes (a generation loop's torch.cat): analysis/model_loop.py
    main_model_call: str | None = None
    main_input_grows: str | None = None
    # ...and the Python loop around that call feeding it one row at a time (`for r in records:
    # model(r.unsqueeze(0))`): its place and its header (analysis/row_loops.py)
    main_model_row_loop: str | None = None
    main_model_row_loop_text: str | None = None
    worker_idle_fraction: float | None = None
    worker_io_fraction: float | None = None
    # Making batches: the main thread's busy samples in the DataLoader (a loader without workers) and
    # the workers' busy samples, and how many of each are inside torch's collate (default_collate
    # putting a batch's samples together: one tensor for each position a sample's values hold).
    main_making: int = 0
    main_collate: int = 0
    worker_making: int = 0
    worker_collate: int = 0
    speedscope: str | None = None
    # No DataLoader, batches received from a producer (analysis/producers.py): the main thread's
    # share blocked receiving them, at this line. The run's other processes' (not DataLoader
    # workers: producers, or a process the script started for itself) samples, busy share, and the
    # line most of their busy samples are at, whether or not the loop waits for them.
    main_wait_share: float | None = None
    main_wait_site: str | None = None
    main_wait_statement: str | None = None
    main_wait_from_process: bool | None = None  # through multiprocessing, else a thread's queue
    producer_samples: int = 0
    producer_busy: float | None = None
    producer_hot: str | None = None
    producer_hot_site: str | None = None
    producer_hot_share: float | None = None


@dataclass
class DebugSetting(Serialisable):
    """A debugging switch that was on while the steps ran (probes/debug_switches.py)."""

    name: str  # "anomaly detection", "CUDA_LAUNCH_BLOCKING=1"
    site: str | None  # the user's line that turned it on ("the environment" for a variable)
    on_share: float  # of the measured steps' span (all of the run's when no step was measured)


@dataclass
class SubnormalLook(Serialisable):
    """One look at the optimizers' CPU tensors for subnormal values (probes/subnormals.py)."""

    t: float  # when (the monotonic clock of the run's events)
    step: int  # the step it followed (the clock's count, from 1)
    sampled: int  # elements looked at
    subnormal: int  # of them, subnormal
    kind: str | None  # where the largest share was: "exp_avg", "parameters", "gradients"
    kind_share: float  # that share
    weights_share: float = 0.0  # of the parameters' sampled values (the weights the math multiplies)
    penalty: float | None = None  # this CPU's time on subnormal values, of normal (None: not timed)
    backward: bool = False  # a look into one backward's op outputs, not at the optimizers' tensors


@dataclass
class EvalAutograd(Serialisable):
    """Evaluations (model.eval() ... model.train()) whose forward autograd recorded: a graph per
    batch that nothing runs backward through (probes/modes.py; analysis/eval_autograd.py)."""

    function: str | None  # the user function the forward ran in (evaluate)
    site: str | None  # the user's line that called the model
    passes: int  # such evaluations
    seconds: float  # their time, launch clock, less saves inside them
    share: float  # of the run's wall time
    # The main process's memory (PSS) rising within a pass over its value at the pass's start, the
    # most of any pass sampled: graphs kept alive with the outputs the loop keeps.
    rise_bytes: int | None = None
    # Marked by the script's model.eval() (False: a DataLoader's evaluation pass, never marked).
    eval_called: bool = True


@dataclass
class StepGrowth(Serialisable):
    """Steps that take longer as the run goes (analysis/growth.py): their trend against their
    position in the run, or in their epoch where the growth starts again each epoch."""

    first_s: float  # median step of the first quarter of positions
    last_s: float  # median step of the last quarter
    per_step_s: float  # seconds each position adds to a step (the fitted slope)
    base_s: float  # the fitted step at position 0
    rho: float  # how steady the trend is: rank correlation of ten groups' medians with their order
    by_epoch: bool  # positions counted from each epoch's start
    steps: int  # steps on the clock
    extra_s: float  # what the trend added to the run's steps, all of them
    training_s: float  # the steps' own time (evaluation and checkpoints left out)
    function: str | None = None  # the user's code whose time per step grew most
    location: str | None = None  # its line
    called_at: str | None = None  # the loop's line that calls it (a helper's)
    kind: str | None = None  # what it does, from its text (growth.SELF_CONCAT, growth.HISTORY)
    statement: str | None = None  # its text
    line_share: float | None = None  # its growth, of the steps' growth
    cpu_ratio: float | None = None  # the main thread's CPU per step, last quarter over first
