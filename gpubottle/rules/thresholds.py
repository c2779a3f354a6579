"""Every threshold the rules use, in one place, with one line of why; the measurements behind the
values are in docs/thresholds.md."""

# How many measured steps a verdict needs, and what makes a step a pause, are the definition of
# the measured steps themselves: gpubottle/clock.py (the analysis applies them before any rule).

# Input wait: a share of step time, and an absolute floor per step, both required. The floor keeps a
# toy loop (0.2 ms of wait in a 1.6 ms step = 13%) from being called data-starved.
INPUT_WAIT_INFO = 0.05
INPUT_WAIT_WARNING = 0.15
INPUT_WAIT_CRITICAL = 0.40
# A loop waiting INPUT_WAIT_WARNING or more on a DataLoader without workers (its batches made in the
# main process, between the steps' computations) that computes this share of the step or more:
# compute-bound is said beside the input finding, with its own fixes (each part's fix shortens it).
COMPUTE_BESIDE_INPUT = 0.5
INPUT_WAIT_FLOOR_S = 0.001
# ...except where the wait is most of a short step: from a quarter of a millisecond at
# INPUT_WAIT_CRITICAL of the step (a tabular MLP's 1.5-ms step waiting 0.74 ms for a per-sample
# fetch read compute-bound; the batches indexed whole, its loop ran 2x faster).
INPUT_WAIT_SHORT_FLOOR_S = 0.00025


def input_wait_counts(share: float, wait_s: float) -> bool:
    """A wait for batches, of this share of the step and these seconds a step, is worth saying."""
    return share >= INPUT_WAIT_INFO and (
        wait_s >= INPUT_WAIT_FLOOR_S or (share >= INPUT_WAIT_CRITICAL and wait_s >= INPUT_WAIT_SHORT_FLOOR_S))
# The first epoch's wait per batch this many times the later epochs': the dataset (or the OS) caches
# what it read once (rules/input/first_epoch.py: measured 64 ms a step in the first epoch, 0.3 ms after).
FIRST_EPOCH_WAIT_RATIO = 5.0
# A background thread's fetches of this share of the loop's step or more make it the loop's likely
# pace (background-fetched batches: the loop's wait is its own thread's time off the CPU).
BACKGROUND_FETCH_SHARE = 0.5

# A loader (the main thread with num_workers=0, or a worker) blocked this share of the time (not on
# a CPU, and not waiting for one) waits on I/O or a remote store: more workers overlap the waits
# without needing a core each, whatever else runs on the machine.
LOADER_BLOCKED_IO = 0.5
# A loader that computes (not blocked) and waited for a core this share of the time is starved of
# CPU: more workers of it only queue longer.
LOADER_CPU_STARVED = 0.15
# A loader that uses this share of a core or more computes: when it also waits for a core
# LOADER_QUEUED of the time (the cores are contended), its blocked time is not reads (workers behind
# on reads use far less CPU, though they too queue for a core after each read).
LOADER_COMPUTES = 0.1
LOADER_QUEUED = 0.1
# With workers, the thread that takes their batches spent CONSUMER_RUN_QUEUE of its wait for them in
# the run queue (runnable, no core free), and on a CPU or in the run queue CONSUMER_SHARE of it: the
# batches were ready or the workers starved of CPU alike, not behind on I/O, and more workers cannot
# help.
CONSUMER_RUN_QUEUE = 0.25
CONSUMER_SHARE = 0.4
# Runs saved before the run queue was measured inside the wait: the main thread's run queue over the
# whole run at MAIN_CPU_STARVED or more, and no less than the loop's wait share.
MAIN_CPU_STARVED = 0.3
# While the loop waits for data, the workers' stacks (py-spy --idle) are on their index queue, waiting
# for work, at least WORKERS_WAIT_FOR_WORK of the time (WORKER_STACKS_MIN samples or more): the
# batches are made and the hand-off to the main process is what is slow, not reads, and more workers
# cannot help.
WORKERS_WAIT_FOR_WORK = 0.5
# The loader workers spend this share of their CPU or more in threads besides their main one (a
# native library's pool: numpy's OpenBLAS starts a thread per core in every worker), and waited
# this share of the time for a core (or the run fills its cores): the pools oversubscribe them.
# Measured here, 2 workers doing two 512x256 matmuls a sample on 2 cores: 50% of their CPU in the
# pool, 56% of their time waiting for a core; OPENBLAS_NUM_THREADS=1: 24-26 s -> 10-10.5 s.
WORKER_POOL_SHARE = 0.25
# A custom autograd Function's Python loop holds this share of the main thread's samples or more:
# said first in compute-bound (a row-by-row backward: 3.3 ms a step, 0.9 ms as one masked op).
AUTOGRAD_LOOP_SHARE = 0.3
# A row-by-row loop of the model's own forward (analysis/forward_rows.py) holds this share of the
# main thread's samples or more, counted with the backward of what it recorded (backward's share
# in proportion to the loop's part of the forward): said first in compute-bound (a graph layer's
# messages summed edge by edge: backward 4.7 s of 5.2, the loop's forward 0.3; index_add_ 0.3 s).
FORWARD_LOOP_SHARE = 0.3
# A tensor the forward fills element by element at every call (a causal mask, entry by entry):
# said first in compute-bound from this share of the main thread's samples (no backward: its
# writes record no nodes). Measured: T = 96, 2 encoder layers, ~20% of the steps (3.9 s -> 3.4 s
# with torch.triu); the writes grow with T squared. The same for a tensor's values made as Python
# numbers (forward_rows.VALUES_LOOP: a mask as a comprehension, ~25% of a step at T = 128).
FORWARD_FILL_SHARE = 0.15
# A module called without gradients inside the training step on this many times the rows the
# training's own calls take, for this share of the counted step or more: a set encoded again every
# step (negatives mined from the whole dataset: 21 of 22 ms a step; refreshed every 50 steps the
# run took 4.5 s instead of 9.4).
NO_GRAD_ROWS_RATIO = 4
NO_GRAD_CALL_SHARE = 0.3
# A hook the script registered on its modules or tensors, of the main thread's samples, said first
# (activation statistics on every layer: 28-35% of the samples where it was half the step)
HOOK_SHARE = 0.2
WORKER_POOL_RUN_QUEUE = 0.2
WORKER_POOL_FULL = 0.9  # ... or the run's processes use this share of its cores
WORKER_STACKS_MIN = 10
# More workers are advised when the worker plan predicts at least this speed-up of the step; a
# smaller predicted gain (the CPU near its limit, where the model is least sure) is worded as an
# experiment to measure, with no promise.
MIN_WORKER_SPEEDUP = 1.25
TRY_WORKER_SPEEDUP = 1.1
# A change predicted to gain less than this share of the step (or of the run) is no fix: it is not
# proposed.
MIN_FIX_GAIN = 0.05

# With workers, the main process still spends CPU taking each batch from them (unpickling, shared
# memory). Busy this share of its wait (less the time it waited for a core), the wait is partly its
# own work, not I/O or slow workers.
MAIN_RECEIVE_SHARE = 0.3
# A batch of this many tensors or fewer already crosses from a worker in as few pieces as it can
# ((x, y): two): "return fewer pieces" is not said. Measured with 2 workers (main thread's CPU a
# batch): (x, y) 0.47-0.53 ms, a dict of 20 tensors 1.64-1.85 ms (~65 us a tensor beyond), 64 lists
# of 200 floats 0.46-0.50 ms (pickled numbers are cheap).
RECEIVE_FEW_TENSORS = 4
# Workers that wait for work on their queue this share of the time or more, while taking their
# batches costs the main process (MAIN_RECEIVE_SHARE): num_workers=0 is offered as a try, timed by
# --try-fixes (an in-memory TensorDataset on 2 cores: 4 workers 11.1 s, none 7.9 s).
WORKERS_IDLE_FOR_NONE = 0.5
# ... and only where the workers' time making batches is CPU (their cores over the share of time
# they are not idle): samples that wait on reads (0.29 measured, 8 workers of 0.1 ms reads: none
# would be 2x slower; 0.69 in a run whose stacks had them 87% idle) overlap their waits in the
# workers; the TensorDataset's made batches at 1.08 (0.62 in a run with them 79% idle: no try).
NO_WORKERS_MAKING_CPU = 0.7
# ... and only where making a batch costs at most this many times the loop's wait for one: the
# loop would make each batch itself, so a batch that costs more than the wait it replaces makes the
# step longer (PNGs decoded by PIL in 2 workers: 8.2 ms of CPU a batch against a 3.4-ms wait was
# offered the try; the TensorDataset that gained from none: ~0.5 ms against 3.5).
NO_WORKERS_MAKE_OVER_WAIT = 1.5

# Spare capacity: at least this many idle cores means the input pipeline could use more.
SPARE_CORES_MIN = 0.5
# Mention the workers' run-queue time as evidence from this share up.
RUN_QUEUE_MENTION = 0.1
# A user function named as the place to make cheaper: this share of the loader's samples, and the
# runners-up from ALSO.
HOT_FUNCTION_SHARE = 0.2
HOT_FUNCTION_ALSO = 0.05
# A kind of library work under that function said as "most of it" from this share of its samples;
# under it (a kind holds half or more to be said at all), its share itself.
MOST_SHARE = 0.6
# Fewer main-thread stack samples than this say nothing about a loop's own batch making.
MIN_STACK_SAMPLES = 15
# torch's default_collate holding this share of the samples that make batches (at least
# COLLATE_MIN_SAMPLES of them), in a batch of more than RECEIVE_FEW_TENSORS tensors: the samples'
# values are put together one position at a time. Measured (2 cores, a sample a list of 256 Python
# floats, batch 64): 34 of 34 making samples in collate without workers, 59 of 67 with 2 workers;
# the loop's 564 batches 2.3-3.0 s, 0.5-0.6 s with the rows kept as one tensor made in __init__.
COLLATE_SHARE = 0.5
COLLATE_MIN_SAMPLES = 10
# ...and where too few stack samples tell (a short run), a batch of this many tensors or more from
# torch's collate says it alone: number_lists.py's 257 a batch of 64 read "try num_workers=2" in a
# 150-step run, where 2 workers took 174 s for what none took in 5.
COLLATE_MANY_TENSORS = 64
# The user's sampler (under the DataLoader's _next_index, in the main process) holding this share of
# the main thread's samples in the DataLoader is the wait's cause: at least half of it.
SAMPLER_WAIT_SHARE = 0.5
# nn.MultiheadAttention asked for weights the line drops: said where its forward holds this share of
# the main thread's samples (a 2-block model at 512 tokens: ~25%, the run 1.28x faster without).
ATTENTION_WEIGHTS_SHARE = 0.05
# Attention written by hand (softmax(q @ k^T) @ v): said where its statements hold this share of the
# main thread's samples (their forward only: backward names no line). The causal 2-block model at 512
# tokens: ~20% of them, its steps 1.35x faster with scaled_dot_product_attention.
HAND_ATTENTION_SHARE = 0.05
# An embedding lookup written as a one-hot matrix product, from this share of the main thread's samples
# at its lines (its forward's part: the product's backward, as large, names no line)
ONEHOT_LOOKUP_SHARE = 0.05
# A Conv2d model: its convolutions holding this share of the main thread's samples, or more, in a
# forward of FORWARD_SHARE_CONV or more: channels_last is offered first among the faster math (a
# 3-block CNN: 12% in Conv2d, 56% in the forward (its BatchNorm and pooling most of it, as slow in
# NCHW on a CPU), 80 -> 57-70 ms a step in channels_last).
CONV2D_SHARE = 0.05
FORWARD_SHARE_CONV = 0.25
# ... and its wait at each epoch's first batch this share of the epochs' waits, or more: it makes the
# epoch's whole order before its first index (a list built in __iter__), not a batch's at a time.
SAMPLER_EPOCH_START_SHARE = 0.5
# A loader iterated anew for (nearly) every batch (`next(iter(loader))` in the loop): at least this
# many iterators, at most this many batches each, from a dataset that holds many more.
ITERATORS_PER_BATCH_MIN = 10
ITERATORS_PER_BATCH_MAX = 2
# A debugging switch (anomaly detection, CUDA_LAUNCH_BLOCKING) on for at least this share of the
# measured steps is said (debug-mode).
DEBUG_ON_SHARE = 0.5
# One line that built this many optimizers, at least one for every OPTIMIZER_REBUILT_PER_STEPS steps,
# builds them in the loop (optimizer-rebuilt); a few (one per phase, per fold) are no loop's.
OPTIMIZER_REBUILT_MIN = 5
OPTIMIZER_REBUILT_PER_STEPS = 2
# ... or built once an epoch, over the same parameters: at least this many builds and epochs.
OPTIMIZER_EPOCH_REBUILT_MIN = 3
# A compute-bound step whose optimizer.step() takes this share or more, run as a per-tensor loop or
# foreach where a fused step exists: the fused (or foreach) implementation is the first fix offered.
OPTIMIZER_LOOP_SHARE = 0.25
# An optimizer with this many parameter groups, of at most OPTIMIZER_GROUP_TENSORS_MAX tensors each
# on average (layer-wise learning rates, a group per tensor): foreach and fused batch the tensors
# of one group only, so the fix says to merge groups that share their settings.
OPTIMIZER_GROUPS_MANY = 16
OPTIMIZER_GROUP_TENSORS_MAX = 2.0
# A counted step that called the model this many times or more, with inputs of at most
# PER_SAMPLE_ROWS rows: a Python loop over the batch's samples (compute-bound says to batch it).
PER_SAMPLE_CALLS_MIN = 4
PER_SAMPLE_ROWS = 1

# Headroom when sizing workers: produce batches this much faster than the loop consumes them.
WORKER_MARGIN = 1.2
# Above this share of the run's cores busy at the predicted step, a worker fix for CPU-bound loading
# says "try" instead of promising a number: near the CPU limit the plan overpromises.
PREDICT_MAX_CPU_LOAD = 0.7
MAX_WORKERS_IO = 32  # I/O-bound workers need no core each, but each costs memory and file handles
MAX_WORKERS_UNKNOWN_CPU = 8  # the cores are unknown (a trace): stay modest

# Compute-bound on CPU: the loop's thread must be on a CPU (or waiting for one) for most of the time
# it does not wait for data.
COMPUTE_MAIN_BUSY = 0.5
# ...and when one user function outside the model, data and optimizer takes this share of the main
# thread's stack samples (at least LOOP_OVERHEAD_MIN_SAMPLES of them), the loop's own code sets the
# pace, not the model's math: the fix names that function instead of faster math.
LOOP_OVERHEAD_SHARE = 0.3
# Below that, down to LOOP_OVERHEAD_INFO_SHARE, the function is still said (info, beside the
# verdict, with its remedy), and faster math keeps its place: it speeds up the rest of the step. (A
# best-weights deepcopy each step, 16% of a 4 ms step, went unsaid.)
LOOP_OVERHEAD_INFO_SHARE = 0.15
# ...and down to this share where its time is work of a known kind, whose remedy removes it (a
# teacher's EMA over 98 tensors by hand, 15% of the samples of a 6.6-ms step: 0.82 ms a step as the
# loop, 0.11 ms as one torch._foreach_lerp_, went unsaid).
LOOP_OVERHEAD_KNOWN_SHARE = 0.08
# The function waits rather than computes where the loop's thread was off a core (not queued for one)
# for at least this share of the function's share of the step: a tracker's blocking HTTP call.
LOOP_OVERHEAD_WAITS = 0.5
LOOP_OVERHEAD_MIN_SAMPLES = 15
# compute-bound is called "the model's own computation" only when this share of the main thread's
# stack samples is in forward, backward and the optimizer step.
MODEL_SHARE_TOLD = 0.5

# Host memory.
MEM_WARNING = 0.85
MEM_CRITICAL = 0.95
GROWTH_MIN_BYTES_PER_S = 1 << 20  # 1 MiB/s
GROWTH_MIN_R2 = 0.8
GROWTH_MIN_TOTAL_BYTES = 64 << 20
GROWTH_MIN_SAMPLES = 20
# A rise whose last third (GROWTH_TAIL_MIN_S long or more) climbs at under this share of the whole
# line's rate has levelled off: no exhaustion is projected from it.
GROWTH_TAIL_SHARE = 0.2
GROWTH_TAIL_MIN_S = 2.5
# Forked DataLoader workers copying the dataset they read: their private memory grows steadily
# (this R^2) and makes up at least this share of the run's growth.
COPY_ON_READ_R2 = 0.6
# Forked workers copy only what they read as Python objects: a dataset holding fewer (counted by the
# probes' census of its containers) would copy at most this many pages, ~40 MB, even one per page.
COPY_ON_READ_MIN_OBJECTS = 10_000
COPY_ON_READ_SHARE = 0.6
# Copy-on-read slower than GROWTH_MIN_BYTES_PER_S (few reads a second, a long run ahead): named from
# this rate (15 MiB a minute: about 1 GiB an hour of a long run) when the workers' own memory grew
# this much over the measured steps along a line this straight, while the main process held
# WORKER_COPY_MIN_BYTES or more before they started. (Measured: 0.7 MB/s, R^2 0.93, 13 MB over
# 18 s, for two workers reading 2 records a step from 600k held as dicts; the same shape on an AMD
# EPYC host rose less straight, R^2 0.765, 0.771 and 0.799 in three runs at 0.87-1.10 MB/s, and
# was lost at 0.8.)
COPY_ON_READ_SLOW_BYTES_PER_S = 256 << 10
COPY_ON_READ_SLOW_GROWTH_BYTES = 8 << 20
COPY_ON_READ_SLOW_R2 = 0.7
# Workers holding their own copy of the dataset: one worker's own memory (USS) from this size, and
# all of theirs from this total (spawned workers), or from this share of what the main process held
# before they started (forked ones, the copying done): a worker that only reads arrays or tensors
# keeps a few tens of MB of its own.
WORKER_COPY_MIN_BYTES = 128 << 20
WORKER_COPIES_MIN_BYTES = 512 << 20
COPIED_SHARE = 0.5
WORKER_COPIES_WARNING = 0.5  # spawned copies bring the run's peak to this share of the limit
# A spawned worker's own memory when it loads nothing: Python, torch and the script.
SPAWNED_WORKER_BASE_BYTES = 192 << 20
# A tensor census group that grew by fewer tensors and fewer bytes than these is the loop's current
# batch (or its prefetched ones), not a leak.
LEAK_MIN_COUNT = 8
LEAK_MIN_BYTES = 16 << 20
# Growth said as the allocator's (glibc malloc keeping what the script freed: fragmentation) when
# malloc's free bytes grew by this share of what the run grew between the two censuses, and by this
# much at least. (Measured: a DQN keeping a 28 KB frame a step grew 1.1 GB in 500 steps, 1.1 GB
# of it free in malloc's heap; with jemalloc, flat.)
HEAP_FREE_MIN_SHARE = 0.5
HEAP_FREE_MIN_BYTES = 32 << 20
EXHAUSTION_CRITICAL_S = 3600.0
# A tensor the script holds whose autograd graph holds the first census's largest graph and grew by
# this many nodes between the censuses keeps every step's graph (`running += loss`): a few steps'
# graphs (a Linear layer's step is ~8 nodes; probes/graph_growth.py walks 30,000 at most).
GRAPH_MIN_GROWN_NODES = 100
# The script's own list or dict whose items (what its newest ones hold, times those added) make up
# this share of what the run grew between the censuses is named as what keeps it.
KEPT_MIN_SHARE = 0.25
# Growth nothing the censuses saw explains (no tensors piling up, no buffer filling, no free heap)
# projected further than this many times the seconds it was fitted on is a warning, not critical:
# memory that climbs for a while and levels off looks the same (a DQN's transitions, 12 s fitted,
# "runs out in about 30 min", levelled off at 475 MB).
GROWTH_UNEXPLAINED_HORIZON = 20.0
EXHAUSTION_WARNING_S = 24 * 3600.0

# CPU contention.
OUTSIDE_CORES_WARNING = 0.5
# GIL contention: a Python thread of the script's process beside the loop that used this much of a
# core over the measured steps, running (not waiting) in this share of its samples...
GIL_THREAD_CORES = 0.3
GIL_THREAD_BUSY = 0.5
# ...while the loop's own thread was this share of the time neither on a CPU, waiting for one, nor
# in a wait (data, a queue): kept from the lock (a spinning monitor thread: 50%, steps 24x slower;
# a loop alone on its cores: under 5%). Critical from the second value.
GIL_LOOP_HELD = 0.25
GIL_LOOP_HELD_CRITICAL = 0.5
# A thread running in this share of its samples or more never waits for work: it polls (its fix:
# wait between checks); below it, it waits for work part of the time (its fix: the work elsewhere).
GIL_POLLING = 0.95
# ...blamed on other programs only when the processes a scan named used this share of it (the run's
# own short-lived workers and the kernel's work for it show as unattributed CPU too).
OUTSIDE_NAMED_SHARE = 0.5
THREADS_OVER_CORES = 1.5  # torch threads this many times the cores available: oversubscribed
WORKERS_OVER_CORES = 2.0  # CPU-busy DataLoader workers this many times the cores: oversubscribed
# torch computing on fewer threads than cores (by this margin) while using all of them: room to add.
THREADS_UNDER_CORES_MARGIN = 0.5

# GPU (from a trace or run's profiler window).
COPY_WARNING = 0.15  # share of step time in host<->device copies
COPY_FLOOR_S = 0.001
PAGEABLE_SHARE = 0.5  # of copy time from pageable memory: pin it
DTOH_SHARE = 0.3  # of copy time device-to-host: reads every step
DATASET_GPU_FRACTION = 0.5  # the whole dataset fits in this share of free GPU memory: move it once
MATMUL_SHARE_MIN = 0.2  # matmuls/convolutions this share of kernel time: their precision decides
PRECISION_MAJORITY = 0.5  # of matmul time in one precision: that precision describes the run
SYNC_WARNING = 0.10  # share of step time the GPU idles after the steps' synchronising calls
SYNC_FLOOR_S = 0.001
GPU_COMPUTE_BUSY = 0.5  # kernels busy this share of the step: compute-bound on the GPU
# Whether the GPU sets the pace (the host runs ahead of it) is the step clock's definition, shared
# with the run's account: gpubottle/clock.py's HOST_AHEAD and HOST_AHEAD_IDLE.
HOST_IDLE_WARNING = 0.15  # GPU idle with nothing submitted
# GPU memory that climbs step after step (a leak): the CUDA OOM hours later.
GPU_GROWTH_MIN_BYTES_PER_S = 1 << 20
GPU_GROWTH_MIN_TOTAL_BYTES = 256 << 20
GPU_GROWTH_MIN_SAMPLES = 10
GPU_MEM_WARNING = 0.90
GPU_MEM_CRITICAL = 0.97
FRAGMENTATION_RATIO = 1.5  # reserved this many times allocated
FRAGMENTATION_SLACK = 0.2  # reserved-but-unused this share of the device: fragmentation outright
FRAGMENTATION_SLACK_MIN = 0.05  # ...or over the ratio and at least this share of the device
OTHER_PROCESSES_MIN = 0.05  # memory other processes held, as a share of the device, worth naming
GPU_BATCH_HEADROOM = 0.9  # size the batch to this share of what the allocator could have had
HELD_TENSORS_MIN = 0.1  # same-shaped tensors held from Python, this share of allocated: named
MODEL_STATE_NOTE = 0.3  # model state this share of allocated: say it does not shrink with the batch
MODEL_STATE_FIRST = 0.5  # ...and from this share, its fixes come before the batch's
STRAGGLER_RATIO = 1.15  # slowest rank's mean step vs the median rank
# Ranks in step with each other all take the slowest one's time; the others spend the difference
# waiting at the collectives. A rank whose own work (input wait + computing, or all but its
# communication on a GPU) is this share of the step above the other ranks' sets the pace.
STRAGGLER_OWN_GAP = 0.15
# ...and at least this many times theirs: ranks that all starve for data arrive at the collective
# a batch apart by chance, which is no straggler.
STRAGGLER_OWN_RATIO = 1.5
THROTTLE_SHARE = 0.2  # share of NVML samples with a speed-costing throttle reason
NVML_BUSY = 0.8  # NVML utilization: kernels running this share of the time
COMM_EXPOSED_WARNING = 0.15  # communication not hidden under compute, as a share of the step
KERNELS_UNNAMED = 0.1  # kernel time the name table cannot classify, worth saying beside precision

# The whole run (the account): a phase outside the training step is diagnosed from this share of
# the run's wall time, and a finding's severity, when it is about the run, comes from its share of
# the run as an input wait's does from its share of the step.
PHASE_MIN_SHARE = 0.10
RUN_SHARE_WARNING = 0.15
RUN_SHARE_CRITICAL = 0.40
# Checkpoints: named from this share of the run and this many seconds in all.
CHECKPOINT_MIN_SHARE = 0.05
CHECKPOINT_FLOOR_S = 0.2
# Saving less often: propose an interval at which saves would cost about this share of the run.
CHECKPOINT_TARGET_SHARE = 0.02
# An evaluation without a DataLoader: named from PHASE_MIN_SHARE of the run; "evaluate less often"
# aims for this share of the rest of the run.
EVAL_TARGET_SHARE = 0.05
# ...and its model called one sample at a time: from this many calls a pass with at most
# EVAL_FEW_ROWS rows a call on average (3,000 rows of a small MLP on a test machine: 67 ms a pass
# one row a call, 0.7 ms 256 a call), batches are the first fix.
EVAL_MANY_CALLS = 64
EVAL_FEW_ROWS = 2.0
# An evaluation autograd recorded (no torch.no_grad()): said from this share of the run, or where the
# process's memory rose this much within each pass (graphs kept alive with the outputs).
EVAL_AUTOGRAD_MIN_SHARE = 0.05
EVAL_AUTOGRAD_RISE_BYTES = 256 << 20
# A save this large (bytes) is more than resuming needs, often: say what to keep.
CHECKPOINT_BIG_BYTES = 64 << 20
# Start-up: the script's own part of it (not Python, not `import torch`) from this share of the
# run and this many seconds.
STARTUP_MIN_SHARE = 0.15
# No training step timed the run and this share of the main thread's samples (at least this many)
# is in a model's forward or backward: an inference or generation script, its model's computation
# said as that (rules/compute/untimed.py), not as start-up.
UNTIMED_MODEL_SHARE = 0.5
UNTIMED_MIN_SAMPLES = 5
STARTUP_FLOOR_S = 1.0
# The script's own work after its last step (not the interpreter's exit): the same bounds.
TEARDOWN_MIN_SHARE = 0.15
TEARDOWN_FLOOR_S = 1.0
# Long gaps between the steps that no phase explains (the account's between-steps: a key sorted at
# each epoch's start, a statistic over the dataset, a gc), said as the run's from this share of it
# and this long in all: the step statistics leave them out, so no step finding speaks for them.
PAUSES_MIN_SHARE = 0.10
PAUSES_FLOOR_S = 1.0
# ...named by at least this many of the main thread's stack samples in them, and at a regular step
# (analysis/gaps.py's REGULAR_CV) or once in work of no more than this share of the steps' own
# samples: beside busy programs steps preempted for 0.1-0.6 s were "pauses" in opt.step(),
# print(...) and unsampled code (8 of 120 saved runs), at no regular step.
PAUSES_MIN_SAMPLES = 3
PAUSES_USUAL_MAX = 0.10
# A CPU loop of batches this small (the DataLoader's batch_size) and steps this short is mostly
# per-operation overhead (Python, operator dispatch, the optimizer's per-tensor loop), not arithmetic:
# larger batches spread it, and faster math does not help (at batch 1 a 2-layer MLP's 0.44 ms step
# took 0.47 ms at batch 32; torch.compile made it 1.02 ms, bfloat16 autocast 0.69 ms, on this VM).
SMALL_BATCH_MAX = 8
SMALL_BATCH_STEP_S = 0.005  # (a batch's share of the step where gradients accumulate over several)
SMALL_BATCH_TO = 32
# Batches a step within this of a whole number of two or more: gradients accumulated over them
# (an epoch's last step may take fewer). The fix then merges them into one batch of as many samples.
ACCUMULATED_SLACK = 0.15
# ...unless the step runs backward fewer than this many times a step: the loop gathers the batches
# into one step's batch itself (a list of batch_size=1 batches, then torch.cat), one backward a step
GATHERED_BACKWARDS_MAX = 1.5
# Loop overhead: code outside the model this share of the main thread's time in the steps (or of
# the run, between steps) is named as a finding of its own; done every N steps, it costs 1/N.
LOOP_OVERHEAD_EVERY = 10


def severity_for_run_share(share: float) -> str:
    if share >= RUN_SHARE_CRITICAL:
        return "critical"
    if share >= RUN_SHARE_WARNING:
        return "warning"
    return "info"


def severity_for_share(share: float) -> str:
    if share >= INPUT_WAIT_CRITICAL:
        return "critical"
    if share >= INPUT_WAIT_WARNING:
        return "warning"
    return "info"
# Steps that grow as the run goes (analysis/growth.py): named where the last quarter's steps take
# STEP_GROWTH_RATIO times the first quarter's along a steady rise (the rank correlation of ten
# groups' medians with their order: 0.95-1.0 on a torch.cat each step), and the growth costs
# STEP_GROWTH_MIN_SHARE of the steps' time; a line is named as its cause where its own growth is
# STEP_GROWTH_LINE_SHARE of the steps'.
STEP_GROWTH_RATIO = 1.5
STEP_GROWTH_RHO = 0.8
STEP_GROWTH_MIN_SHARE = 0.10
STEP_GROWTH_LINE_SHARE = 0.5
# A line whose own text says what grows (x = torch.cat([x, ...]), sum(history) over a list appended
# to) is named on a smaller share: beside a loaded machine the stack samples spread the late steps'
# time over lines that waited for a core (a CI run kept the cat line with its kind and dropped it).
STEP_GROWTH_KNOWN_LINE_SHARE = 0.25

# subnormal-math (rules/compute/subnormal.py): a look that finds this share of the sampled elements
# subnormal (Adam's exp_avg of dead ReLU units: 30-73% of it in the MLPs measured here) after one
# that found under SUBNORMAL_CLEAN_SHARE, where the steps after it take SUBNORMAL_SLOWDOWN times the
# steps' before it (median) and the difference is SUBNORMAL_MIN_SHARE of the steps' time. Measured:
# a 512-wide MLP with Adam, 3.2 ms -> 5-7 ms a step once 60-73% of exp_avg was subnormal; a
# 256-wide one, 41% subnormal, 1.6 -> 1.8 ms (its steps are op overhead, not arithmetic): no finding.
SUBNORMAL_MIN_SHARE_SAMPLED = 0.01
SUBNORMAL_CLEAN_SHARE = 0.001
SUBNORMAL_SLOWDOWN = 1.25
SUBNORMAL_MIN_SHARE = 0.10
SUBNORMAL_MIN_STEPS = 20  # steps on each side of the looks
# Weights the forward multiplies (parameters) subnormal in this share of their sampled values: said
# whatever the steps did, their cost being certain and large. Measured, a Linear(1024, 1024) at
# batch 64 on one thread: 1.24 ms; 0.1% of its weights subnormal 4.3 ms, 1% 28.7 ms, 10% 151 ms.
SUBNORMAL_WEIGHTS_SHARE = 0.001
# ...not where this CPU, timed by the probe, multiplies subnormal values at under this many times
# the normal time (an AMD EPYC host: 0.3-0.7x; Intel hosts here ~1.5-10x): nothing to gain there.
SUBNORMAL_PENALTY_MIN = 1.5
# Of one backward's op outputs (sampled), this share subnormal: said (each costs ~100x a normal
# value's op on the Intel hosts measured, so 0.5% of them about doubles those ops' time). A GRU's
# backward over 200 time steps: 13% subnormal, 0.92 s a backward, 0.11 s with them flushed.
SUBNORMAL_BACKWARD_SHARE = 0.005
# gpubottle's hooks past this share of the run by their own clocks (steps of a millisecond or less):
# what they cost the script's code around them (its caches) is about as much again, unmeasured
# (benchmarks/hooks_in_place.py: +27 us a step in place where they timed ~13), and the report says so.
HOOKS_NOTE_SHARE = 0.01
# replayed-batches (rules/input/replayed.py): a loader iterated once inside itertools.cycle, whose
# pass ended, and the loop took at least this share of that pass's batches again in steps after it.
REPLAYED_MIN_SHARE = 0.5
# eval-mode-training (rules/phases/eval_mode.py): at least this many of the recorded optimizer steps,
# and this share of them, taken in eval mode.
EVAL_MODE_MIN_STEPS = 10
EVAL_MODE_MIN_SHARE = 0.1
# An embedding table with a dense gradient (rules/compute/words.py's sparse fix): this share of its
# optimizer's parameters, and a step's lookups read this share of its rows or fewer, where the
# optimizer's step takes OPTIMIZER_LOOP_SHARE of the step. Measured: a 500,000 x 64 table under Adam,
# batches of 256 x 8 ids (2,043 rows, 0.4%): 40 steps 9.3-10.0 s dense, 0.31 s sparse + SparseAdam.
DENSE_TABLE_SHARE = 0.5
# ...or where backward and the optimizer's step together take this share of the training (the
# dense gradient is made in backward: SGD's step alone was 21% of such a step, the two 71%).
DENSE_TABLE_UPDATES_SHARE = 0.5
# Gradients backward computed for parameters no optimizer holds (a teacher's forward outside
# no_grad), said where they are this many times the elements the optimizers train or more: a
# distillation's 1.3M-element teacher beside a 34k student took 1.6-1.7 s for 300 steps, 0.7 s
# under no_grad.
UNTRAINED_GRAD_SHARE = 0.25
# Batches of sequences padded to a fixed length, where this share of their positions is padding or
# more (probes/batch_leaves.padding): the model computes on it. An LSTM over 4,000 reviews of 10-64
# tokens padded to 256 (85% padding): 31-33 s as written, 3.7-4.2 s padded per batch.
PADDING_SHARE = 0.5
# ...and batches each padded to its own longest sample (their lengths differ batch to batch) from
# this share: samples of far-apart lengths drawn together, which batches of similar lengths remove
# with no change to the model (a fixed length may be the model's own). A 2-layer transformer over
# 960 sequences of 20-200 tokens (48% padding: tests/scripts/real_code/padded_transformer.py)
# trained an epoch in 9.1-9.4 s shuffled, 4.7 s from length buckets (make check-fixes: 1.74x a
# step); 1,280 sequences of 20-200 tokens under a wider one, 41% padding: 14.6-21.1 s, 8.3-9.2 s.
PER_BATCH_PADDING_SHARE = 0.3
# Backward run more than once through one forward of the model (losses backpropagated one by one,
# retain_graph=True), said where backward takes this share of the step or more: a shared 1.8M-
# element trunk with two heads backpropagated apart took 14.4-14.6 ms a step with SGD, 7.6-8.4 ms
# summed; with Adam 41% of the step, 1.1-1.15x.
BACKWARD_AGAIN_SHARE = 0.2
# An RNN cell stepped in a Python loop over a sequence made before it (probes/inner_calls.py), said
# where its forwards take this share of the counted step or more (its backward, in C, is about
# twice that): an LSTMCell of 128 over 64 steps read 24%, 46 ms a step; as nn.LSTM 33 -> 12 ms a
# forward and backward. (Since 2026-11-30 the share is of the measured steps' median, which holds
# no hooks: rnn_cell_loop.py at seq-len 32 reads 0.30 so, 0.22 of its counted step.)
CELL_LOOP_FORWARD_SHARE = 0.1
# Activation checkpointing said where the checkpointed blocks' forwards (what backward runs again)
# take this share of the step or more (probes/checkpointing.py): a 6-block MLP's read 21% of a
# 43.8 ms step; without checkpointing 42.3 -> 33.4 ms measured (21%).
CHECKPOINT_RECOMPUTE_SHARE = 0.1
# A penalty written over the parameters tensor by tensor (probes/param_ops.py), said where its
# forward's ops take this share of the quick steps (their 10th percentile) or more; its backward
# takes about as much again: a 7-layer MLP's L2 over 30 tensors read 0.30 ms, 4.5% of its quick
# steps quiet, 2.8-3.5% beside other runs (1.3% of their loaded mean); with weight_decay instead
# 7.0 -> 5.9 ms a step.
PARAM_PENALTY_FORWARD_SHARE = 0.02
# A dataset function's comprehensions holding this share of the loader's samples or more: its
# per-value Python is said (tensor ops on whole arrays), beside a torch.tensor(list) they feed.
COMPREHENSION_SHARE = 0.1
# An evaluation loader of tiny batches (rules/phases/eval_batch.py) is said with SMALL_BATCH_MAX,
# SMALL_BATCH_STEP_S and SMALL_BATCH_TO, except where its passes wait this share of their time or
# more for batches with the loading thread on a CPU under this share of that wait: reads, which
# larger batches would wait for the same.
EVAL_READS_WAIT_SHARE = 0.5
EVAL_READS_CPU_SHARE = 0.5
DENSE_TABLE_TOUCHED = 0.05
# discarded-gradients (rules/compute/discarded.py): this share of the window's backward passes
# cleared by a zero_grad() before an optimizer step used them (4 micro-batches zeroed each: 0.75).
DISCARDED_MIN_SHARE = 0.25
# A loss taken slice by slice of the model's output and summed (analysis/slice_losses.py): said where
# the loop takes this many slices or more and their gradients, each as large as the whole output,
# come to this many bytes a step or more (a GRU tagger's 128 steps of 32 x 128 x 2000 logits: 4.2 GB
# a step, 0.53 s -> 0.09 s as one loss).
SLICE_LOSS_MIN = 8
SLICE_GRAD_BYTES = 256 << 20
