"""A loop that waits for batches: who makes them and what it does meanwhile (on a CPU, waiting for
one, or blocked), and from that the verdict and the worker plan.

The loader is judged by its own thread, and the CPU by what the run itself uses: other programs' load
is a finding of its own (cpu-contention), never a different verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo, Measured, StackFrameShare, SyncSite
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import batches_per_step
from gpubottle.rules.input.fixes import receive_s, receiving_s, waiting_thread
from gpubottle.rules.input.loop import cpu_bound_step
from gpubottle.rules.input.plan import Plan, plan_workers


@dataclass
class Wait:
    """The loop's wait for batches, per measured step: the part spent waiting for workers to start
    again (a rebuilt loader, workers that do not persist) and the steady part once they run."""

    share: float  # of the step
    start_up_s: float
    steady_s: float
    start_share: float
    restarts: bool  # the workers' start costs enough to be said
    steady: bool  # the steady wait costs enough to be diagnosed


def _start_up_s(ev: Evidence) -> float:
    """Mean seconds per measured step spent waiting for workers to start again."""
    st = ev.steps
    idx = st.measured_indices()
    if not st.start_up_wait_s or not idx:
        return 0.0
    return sum(st.start_up_wait_s[i] for i in idx) / len(idx)


def decide_wait(ev: Evidence, w: Measured) -> Wait | None:
    """None when the loop hardly waits."""
    if not th.input_wait_counts(w.wait_share, w.mean_wait_s):
        return None
    start_up = min(_start_up_s(ev), w.mean_wait_s)
    steady = w.mean_wait_s - start_up
    start_share = start_up / w.mean_step_s

    def costs(s: float) -> bool:
        return th.input_wait_counts(s / w.mean_step_s, s)

    return Wait(w.wait_share, start_up, steady, start_share, costs(start_up), costs(steady))


def more_workers_gain(d: Steady, workers: int) -> bool:
    """The worker plan asks for more workers than the loader has, for a gain worth promising."""
    return d.plan is not None and d.plan.workers > workers and d.speedup >= 1 + th.MIN_FIX_GAIN


def more_workers_to_try(d: Steady, workers: int) -> bool:
    """A loader behind on CPU work that more workers might still speed up: offered as a try."""
    return (d.plan is not None and d.plan.workers > workers and not d.starved_of_cpu
            and d.speedup >= th.TRY_WORKER_SPEEDUP)


@dataclass
class LoaderState:
    """Whoever makes the batches, while the loop waits: share of time on a CPU, runnable but
    waiting for one, and (the rest) blocked on I/O, a queue or sleep."""

    who: str
    busy: float | None
    run_queue: float | None

    @property
    def blocked(self) -> float | None:
        if self.busy is None:
            return None
        return max(0.0, 1.0 - self.busy - (self.run_queue or 0.0))


def loader_state(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float) -> LoaderState:
    c = ev.cpu
    if not lo.num_workers:
        busy = (w.wait_cpu_s / w.n / wait_s) if (w.wait_cpu_s is not None and wait_s > 0) else None
        # Its run queue within the waits where measured, else over the whole run.
        rq = waiting_thread(w)[1]
        return LoaderState("main process", min(1.0, busy) if busy is not None else None,
                           rq if rq is not None else (c.main_run_queue if c else None))
    if c is None or c.per_worker_cores is None:
        return LoaderState("workers", None, None)
    return LoaderState("workers", min(1.0, c.per_worker_cores), c.per_worker_run_queue)


def _saturated(ev: Evidence) -> bool:
    """Every core busy (by anyone): a loader that looks idle may then be starved of CPU rather than
    blocked, which only the run queue tells apart."""
    c = ev.cpu
    if c is None or not c.cores_available:
        return False
    if c.system_cores is not None and c.cores_logical:
        return c.cores_logical - c.system_cores < th.SPARE_CORES_MIN
    return (c.tree_cores or 0.0) + (c.outside_cores or 0.0) >= c.cores_available - th.SPARE_CORES_MIN


def consumer_queue(ev: Evidence, w: Measured) -> tuple[bool, float | None, bool]:
    """Whether the thread taking the workers' batches was starved of CPU: it waited for a core for
    much of its wait for them, and was on a CPU or waiting for one for most of it (the batches were
    ready, the workers ahead). With the run-queue share that says so, and whether it is the share
    of the wait (else of the whole run: runs saved before the wait's run queue was measured, where
    it bounds how much of the loop's wait it can explain)."""
    cpu, rq = waiting_thread(w)
    if rq is not None:
        return rq >= th.CONSUMER_RUN_QUEUE and rq + (cpu or 0.0) >= th.CONSUMER_SHARE, rq, True
    main_rq = ev.cpu.main_run_queue if ev.cpu is not None else None
    if main_rq is None:
        return False, None, False
    return main_rq >= th.MAIN_CPU_STARVED and main_rq >= w.host_wait_share, main_rq, False


def queued_when_working(state: LoaderState) -> bool:
    """The loader computes (LOADER_COMPUTES of a core or more) and waits for a core at least
    LOADER_QUEUED of the time: its blocked time is a wait for work it is slow to do, not for
    reads. A loader behind on reads computes little, however long it waits for a core after each
    read."""
    rq, busy = state.run_queue, state.busy
    return (rq is not None and busy is not None and rq >= th.LOADER_QUEUED
            and busy >= th.LOADER_COMPUTES)


def workers_wait_for_work(ev: Evidence) -> float | None:
    """The share of the workers' stack samples on their index queue, when it says they mostly wait
    for work: a loader behind on reads has its workers in the reads (or sleeping in them)."""
    st = ev.stacks
    if st is None or st.worker_idle_fraction is None or st.samples_workers < th.WORKER_STACKS_MIN:
        return None
    return st.worker_idle_fraction if st.worker_idle_fraction >= th.WORKERS_WAIT_FOR_WORK else None


@dataclass
class Steady:
    """What the rule decided about the wait for batches while the workers (or the main process)
    make them: the wording reads it, nothing here is a sentence."""

    category: str
    wait_s: float  # mean steady wait a step
    start_up_s: float  # mean wait a step for workers starting again
    state: LoaderState
    mention_run_queue: bool
    receive_s: float | None  # main-process time taking batches from workers, within the wait
    io_bound: bool  # the loader mostly blocks (I/O, a remote store), not on a CPU
    saturated: bool  # every core busy, by anyone
    measured_cpu: bool  # False for a trace: data-starved and preprocessing-bound stay open
    starved_of_cpu: bool  # the loader waits for a core
    plan: Plan | None
    speedup: float  # the worker plan's predicted step speed-up (1.0 without a plan)
    consumer_starved: bool = False  # the main process, taking the workers' batches, waits for a core
    consumer_run_queue: float | None = None  # ... this share of its wait for them (or of the run)
    consumer_in_wait: bool = False  # that share is of its wait for batches (else of the whole run)
    workers_idle: float | None = None  # the workers' stacks wait for work this share (when told)
    gpu_reads: SyncSite | None = None  # the dataset reads GPU memory sample by sample (waits for it)
    sampler: StackFrameShare | None = None  # the user's sampler, in the main process, is most of the wait
    sampler_at_start: float | None = None  # ... mean seconds it takes at each epoch's start, where that is
    # Batches fetched a sample at a time from a dataset that takes their indices at once
    # (LoaderInfo.batch_indexable): work that indexing whole batches removes, whatever the workers.
    batch_indexed: bool = False


SAMPLE_FUNCTIONS = ("__getitem__", "__getitems__", "__iter__", "__next__")


def gpu_reads(ev: Evidence, lo: LoaderInfo) -> SyncSite | None:
    """A line of the dataset's own sample code that waits for the GPU (int(), .item() of a tensor on
    the device): each batch is then made only once the GPU has run the work queued before it, and
    the GPU idles while the rest of the batch is made. Workers cannot take it over (CUDA tensors
    are not read in forked workers)."""
    if lo.num_workers:
        return None
    file = lo.dataset_getitem.rsplit(":", 1)[0] if lo.dataset_getitem else None
    for s in ev.sync_sites:
        if s.function in SAMPLE_FUNCTIONS and (file is None or s.location.rsplit(":", 1)[0] == file):
            return s
    return None


def sampler_at_epoch_start(lo: LoaderInfo) -> float | None:
    """The mean wait for each epoch's first batch, where those waits are most of the epochs' (a
    sampler whose __iter__ builds the whole epoch's order before yielding its first index: 3.9 s at
    each epoch's start, 0.8 ms a batch after); None where the wait is spread over the batches."""
    firsts = lo.first_batch_waits_s
    if not firsts or not lo.epoch_wait_s or not lo.epoch_batches:
        return None
    first = sum(firsts) / len(firsts)
    rest = (sum(lo.epoch_wait_s) / len(lo.epoch_wait_s)) * (sum(lo.epoch_batches) / len(lo.epoch_batches))
    return first if first >= th.SAMPLER_EPOCH_START_SHARE * (first + rest) else None


def sampler_bound(ev: Evidence) -> StackFrameShare | None:
    """The user's sampler is most of the main thread's time in the DataLoader: the DataLoader asks
    it for each batch's indices in the main process, so no worker count changes its pace (a batch
    sampler that sorts a pool of lengths per batch, say)."""
    st = ev.stacks
    if st is None or st.main_sampler is None or st.samples_main < th.MIN_STACK_SAMPLES:
        return None
    return st.main_sampler if st.main_sampler.share >= th.SAMPLER_WAIT_SHARE else None


def decide_steady(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float, start_up: float) -> Steady:
    nw = lo.num_workers or 0
    c = ev.cpu
    state = loader_state(ev, w, lo, wait_s)
    reads = gpu_reads(ev, lo)
    if reads is not None:  # not a loader's speed: no worker plan, the reads must change
        return Steady(v.DATA_STARVED, wait_s, start_up, state, False, None, False, _saturated(ev), True,
                      False, None, 1.0, gpu_reads=reads)
    sampler = sampler_bound(ev)
    if sampler is not None:  # the main process's own work per batch: workers cannot take it over
        return Steady(v.PREPROCESSING_BOUND, wait_s, start_up, state, False, None, False, _saturated(ev),
                      True, False, None, 1.0, sampler=sampler,
                      sampler_at_start=sampler_at_epoch_start(lo))
    recv = receiving_s(w, lo, wait_s)
    blocked = state.blocked
    saturated = _saturated(ev)
    starved, consumer_rq, in_wait = consumer_queue(ev, w)
    consumer_starved = bool(nw) and starved
    idle = workers_wait_for_work(ev) if nw else None
    io_bound = (blocked is not None and blocked >= th.LOADER_BLOCKED_IO and recv is None
                and (state.run_queue is not None or not saturated) and not consumer_starved
                and idle is None and not queued_when_working(state))
    known_cpu = c is not None and c.cores_available is not None and c.tree_cores is not None
    plan = None
    if lo.num_workers is not None:
        per_step = batches_per_step(ev, lo)
        t_batch = (wait_s / per_step) if nw == 0 else nw * (w.mean_step_s - start_up) / per_step
        compute = w.compute_s + (receive_s(w, lo) or 0.0)
        # Loading that waits on I/O needs no core per worker: other programs' load is
        # cpu-contention's to say, and the plan is made as if the run were alone.
        plan = plan_workers(nw, compute, per_step * t_batch, cpu_bound_step(ev, w, alone=io_bound),
                            not io_bound, c.cores_available if c else None)
    speedup = (w.mean_step_s - start_up) / plan.step_s if plan is not None else 1.0
    starved_of_cpu = not io_bound and (state.run_queue or 0.0) >= th.LOADER_CPU_STARVED
    measured = True
    # Waiting on I/O is starvation only while more workers would still gain: at the run's own CPU
    # limit the work itself must shrink.
    io_helps = io_bound and (plan is None or plan.workers <= nw or speedup >= 1 + th.MIN_FIX_GAIN)
    if io_helps or (plan is not None and known_cpu and not starved_of_cpu
                    and speedup >= th.MIN_WORKER_SPEEDUP):
        category = v.DATA_STARVED
    elif known_cpu or state.busy is not None:
        category = v.PREPROCESSING_BOUND
    else:  # a trace: no CPU measurements, so the two stay open
        avail = c.cores_available if c else None
        category = v.DATA_STARVED if nw + 1 < (avail or 2) else v.PREPROCESSING_BOUND
        measured = False
    mention = state.run_queue is not None and state.run_queue >= th.RUN_QUEUE_MENTION
    # An in-memory TensorDataset fetched a sample at a time: the per-sample Python is the cost, and
    # workers only run it elsewhere and hand it across (200,000 x 32 rows in batches of 512 on 2
    # cores: 3 epochs 4.1-4.3 s as written, 4.2-4.3 s with 2 workers, 1.6-2.0 s indexed whole).
    # (Not for a loader a library built, HF's Trainer: no DataLoader call of the user's to change.)
    batch_indexed = bool(lo.batch_indexable) and lo.collate_fn is None and not io_bound and not lo.built_by
    if batch_indexed and measured:
        category = v.PREPROCESSING_BOUND
    return Steady(category, wait_s, start_up, state, mention, recv, io_bound, saturated, measured,
                  starved_of_cpu, plan, speedup, consumer_starved, consumer_rq, in_wait, idle,
                  batch_indexed=batch_indexed)
