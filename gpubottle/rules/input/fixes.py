"""The fixes for a loop that waits for its batches, each computed from the measurements: keep
workers alive across epochs, more workers (with the step they should give), cheaper batches.

A fix that promises a number (`expected`) is one a test applies and times; a change that may not
help (fewer workers, num_workers=0) is worded as something to try and measure, never as advice.
"""

from __future__ import annotations

from typing import Any

from gpubottle.analysis.work_kinds import remedy
from gpubottle.evidence import Evidence, LoaderInfo, Measured, StackFrameShare
from gpubottle.probes.trial import BATCH_INDEX_KEY
from gpubottle.report import Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import batches_per_step, gathered_batches, workers_compute
from gpubottle.rules.contention.decide import named_outside
from gpubottle.rules.input import fix_words as words
from gpubottle.rules.input.first_epoch import first_epoch_reads
from gpubottle.rules.input.plan import Plan


def receive_s(w: Measured, lo: LoaderInfo) -> float | None:
    """Main-thread CPU per step spent taking batches from workers (None without workers)."""
    if not lo.num_workers or w.wait_cpu_s is None or w.n == 0:
        return None
    return w.wait_cpu_s / w.n


def waiting_thread(w: Measured) -> tuple[float | None, float | None]:
    """The thread that waits for batches, over its waits: the share of them it spent on a CPU and
    the share it spent runnable, waiting for one (None where not measured)."""
    if w.wait_s <= 0:
        return None, None
    cpu = min(1.0, w.wait_cpu_s / w.wait_s) if w.wait_cpu_s is not None else None
    rq = min(1.0, w.wait_run_queue_s / w.wait_s) if w.wait_run_queue_s is not None else None
    return cpu, rq


def receiving_s(w: Measured, lo: LoaderInfo, wait_s: float) -> float | None:
    """That receiving cost, when it is a large part (MAIN_RECEIVE_SHARE or more) of the wait the
    thread did not spend waiting for a core: workers on every core leave the thread that takes
    their batches runnable longer, which makes taking them no cheaper (an in-memory TensorDataset,
    4 workers on 2 cores: 0.72 ms of CPU a batch in a 2.3-ms wait, 60% of it in the run queue, one
    run; 0.80 ms in a 2.9-ms wait, 70% queued, the next)."""
    recv = receive_s(w, lo)
    if recv is None:
        return None
    queued = waiting_thread(w)[1] or 0.0
    return recv if recv >= th.MAIN_RECEIVE_SHARE * wait_s * (1.0 - queued) else None


def restart_fix(lo: LoaderInfo, w: Measured, start_up_s: float, epochs: int) -> Fix:
    """Workers start again every epoch: the DataLoader is rebuilt, or its workers do not persist."""
    new_step = w.mean_step_s - start_up_s
    # A loader built anew every epoch needs building once, which no setting does: the fix stays at
    # the DataLoader(...) call, with no change to patch or to say as an option (persistent_workers
    # alone, said as the script's --persistent flag, changed nothing there).
    change: dict[str, list[Any]] = ({} if lo.builds > 1 else
                                    {"persistent_workers": [bool(lo.persistent_workers), True]})
    return Fix(text=words.restart_text(lo.site, lo.builds, lo.start_method, lo.worker_init), where=lo.site,
               change=change,
               expected=words.restart_expected(w.mean_step_s, new_step, start_up_s * w.n / max(1, epochs)),
               expected_step_s=round(new_step, 6))


def worker_fix(ev: Evidence, w: Measured, lo: LoaderInfo, plan: Plan, io_bound: bool, start_up_s: float,
               wait_share: float) -> Fix:
    nw = lo.num_workers or 0
    c = ev.cpu
    outside = named_outside(c) if c is not None else 0.0
    why = words.worker_why(plan.needed, plan.workers, plan.limit == "cpu", io_bound,
                           c.cores_available if c is not None else None,
                           outside if outside >= th.OUTSIDE_CORES_WARNING else None)
    new_step = plan.step_s + start_up_s  # workers starting each epoch are a fix of their own
    compute = w.compute_s
    new_share = max(0.0, (new_step - start_up_s - compute) / new_step)
    change: dict[str, list[Any]] = {"num_workers": [nw, plan.workers]}
    caveat = None
    if c is not None and c.ranks_sharing > 1:
        # The other ranks' workers and the collectives compete for the same cores: a try.
        caveat = words.ranks_caveat(c.ranks_sharing)
    elif not io_bound and not plan.reliable:
        caveat = plan.busy_caveat()
    # Every worker runs an unsplit IterableDataset's __iter__ whole: each record is read (and trained
    # on) num_workers times.
    shard = words.shard_text(lo.dataset_class) if lo.iterable and not lo.shards else ""
    if caveat is not None:
        return Fix(text=words.worker_try_text(plan.workers, w.mean_step_s / new_step, caveat, shard),
                   where=lo.site, change=change)
    return Fix(
        text=words.worker_text(plan.workers, why, shard),
        where=lo.site,
        change=change,
        expected=words.worker_expected(w.mean_step_s, new_step, wait_share, new_share, bool(shard)),
        expected_step_s=round(new_step, 6),
    )


def receive_fix(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float) -> Fix | None:
    """Taking batches from the workers costs the main process: what makes that cheaper (a dataset
    of the user's: what each sample returns; a library's, TensorDataset: the batch sampler fix)."""
    recv = receiving_s(w, lo, wait_s)
    if recv is None or lo.dataset_getitem is None:
        return None
    if lo.batch_tensors is not None and lo.batch_tensors <= th.RECEIVE_FEW_TENSORS:
        return None  # its batches cross in as few pieces as they can: nothing of the dataset's to change
    return Fix(text=words.receive_text(recv / batches_per_step(ev, lo), lo.batch_tensors),
               where=lo.dataset_getitem)


def collate_fix(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float) -> Fix | None:
    """torch's default_collate is most of the time spent making batches (the workers', or the main
    process's without them), and a batch holds many tensors: the samples return their values as
    many pieces (a list of Python numbers: one tensor for each position, made a batch at a time),
    which the dataset's own __getitem__ does not show. The cure removes that work and the pieces'
    crossing from the workers."""
    st = ev.stacks
    if lo.collate_fn is not None or lo.dataset_getitem is None:
        return None
    if lo.batch_tensors is None or lo.batch_tensors <= th.RECEIVE_FEW_TENSORS:
        return None
    making, collate = ((st.worker_making, st.worker_collate) if lo.num_workers else
                       (st.main_making, st.main_collate)) if st is not None else (0, 0)
    share: float | None = collate / making if making else None
    if making < th.COLLATE_MIN_SAMPLES:  # too few samples to tell: the tensors' count alone
        if lo.batch_tensors < th.COLLATE_MANY_TENSORS:
            return None
        share = None
    elif collate < th.COLLATE_SHARE * making:
        return None
    recv = receiving_s(w, lo, wait_s)
    return Fix(text=words.collate_text(share, lo.batch_tensors, lo.batch_size,
                                       recv / batches_per_step(ev, lo) if recv is not None else None),
               where=lo.dataset_getitem)


def gather_fix(lo: LoaderInfo, k: int) -> Fix:
    """The loop gathers k of the loader's batches into each step's batch itself (gathered_batches):
    the loader makes the step's batch instead. Measured here (60,000 rows of a TensorDataset, 64
    batches of 1 gathered by torch.cat a step): the loop 1.9 s; batch_size=64 1.0 s; whole batches
    indexed (BatchSampler of 64) 0.9 s."""
    bs = lo.batch_size or 1
    return Fix(text=f"the loop takes {k} of the DataLoader's batches of batch_size={bs} for each step and "
                    "gathers them into one batch itself (a list of them, then torch.cat, one backward a "
                    f"step): each is fetched and collated apart. Let the DataLoader make the step's batch, "
                    f"batch_size={bs * k}, and take one batch a step (the gathering goes); the same "
                    "batches where the loop kept none back. Try it and time it",
               where=lo.site)  # (no patch: the loop's gathering must go with it, or steps take k x k)


def batch_index_fix(lo: LoaderInfo, per_batch_s: float | None, size: int | None = None) -> Fix:
    """A dataset that takes a list of indices (a TensorDataset, a tabular Dataset of the user's
    whose __getitem__ only indexes its tensors) fetched a sample at a time (Steady.batch_indexed): its
    batches indexed whole, with num_workers=0 where it has workers (a batch is then one index,
    which workers would only hand across: 2 workers 3.1 s, none 1.6-1.9 s on 2 cores). A try:
    --try-fixes times it in the script as written, and --patch writes the measured change."""
    nw = lo.num_workers or 0
    change: dict[str, list[Any]] = {BATCH_INDEX_KEY: [False, True]}
    if nw:
        change["num_workers"] = [nw, 0]
    return Fix(text=words.batch_index_text(lo.dataset_class or "the dataset", size or lo.batch_size,
                                           lo.sampler, bool(lo.drop_last), nw, per_batch_s,
                                           lo.dataset_getitem, lo.batch_sampler is not None),
               where=lo.site, change=change)


def no_workers_fix(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float,
                   idle: float | None) -> Fix | None:
    """num_workers=0 as a try, only where the workers mostly wait for work on their queue while the
    main process pays to take their batches: the batches are cheap to make and dear to hand over.
    Elsewhere never: where the workers compute, the loop would do their work too; where they wait
    on reads, it would wait for every read in turn (8 workers 6 s, none 12.5 s on a 2-core run)."""
    recv = receiving_s(w, lo, wait_s)
    nw = lo.num_workers or 0
    if recv is None or nw < 1 or idle is None or idle < th.WORKERS_IDLE_FOR_NONE:
        return None
    per_worker = ev.cpu.per_worker_cores if ev.cpu is not None else None
    # Making a batch mostly waiting (reads): in the loop it would wait in turn. (Leaving the
    # workers' run-queue time out of their making time, tried: the waiting-on-reads loader, its
    # workers 87% on their queue in one run, then got the try; none is 2x slower there.)
    if per_worker is None or per_worker / max(1e-9, 1 - idle) < th.NO_WORKERS_MAKING_CPU:
        return None
    c = ev.cpu
    if c is not None and c.workers_cores is not None and wait_s > 0 and (
            c.workers_cores * w.mean_step_s > th.NO_WORKERS_MAKE_OVER_WAIT * wait_s):
        return None  # (per step: the workers' making against the loop's wait it would replace)
    return Fix(text=words.no_workers_text(nw, idle, recv / batches_per_step(ev, lo)), where=lo.site,
               change={"num_workers": [nw, 0]})


def _known(top: StackFrameShare) -> bool:
    """The frames beneath the function say what its time is, and that kind has a remedy."""
    return bool(top.kind and remedy(top.kind))


def _loader_hot(ev: Evidence, lo: LoaderInfo | None) -> list[StackFrameShare]:
    """The user functions where the loader's time goes (its workers', or the main process's where
    it loads itself), most first, when the first takes HOT_FUNCTION_SHARE or more; else none."""
    st = ev.stacks
    if st is None:
        return []
    if lo is not None and not lo.num_workers and not st.main_making:
        # No sample of the main process in the loader's own work: its hot list is then the loop's
        # other code (a gradient clip read as "100% of the time spent making batches").
        return []
    hot = st.worker_hot if lo is not None and lo.num_workers else st.main_hot
    return hot if hot and hot[0].share >= th.HOT_FUNCTION_SHARE else []


def sample_work_known(ev: Evidence, lo: LoaderInfo) -> StackFrameShare | None:
    """The loader's hottest function, where it has work of a known kind beneath it (torch.load of a
    file per sample): hot_fix says it, and the generic per-sample advice (batched augmentation) is
    left out."""
    hot = _loader_hot(ev, lo)
    return hot[0] if hot and _known(hot[0]) else None


def _hot_in_collate(ev: Evidence, lo: LoaderInfo) -> bool:
    """The loader's time is mostly in its collate_fn (tokenizing text: 75-90% of it): hot_fix names
    it, and advice about __getitem__'s per-sample work (batched augmentation) does not apply. (A
    helper __getitem__ calls, colour_jitter, is that per-sample work: the advice stays.)"""
    hot = _loader_hot(ev, lo)
    name = (lo.collate_fn or "").rsplit(".", 1)[-1]
    fn = hot[0].function.split(".<locals>", 1)[0] if hot else ""
    return bool(hot and name) and (fn.rsplit(".", 1)[-1] == name or fn.endswith(f"{name}.__call__"))


def hot_fix(ev: Evidence, lo: LoaderInfo | None) -> Fix | None:
    """The user function where the loader's time goes, from py-spy samples."""
    hot = _loader_hot(ev, lo)
    if not hot:
        return None
    top = hot[0]
    if lo is not None and top.location == lo.dataset_getitem and not _known(top):
        return None  # __getitem__ itself, its work of no known kind: the other fixes point there
    # (its comprehensions are shown by its name: "then X 46%" is not said of itself)
    others = [h for h in hot[1:] if words.shown(h.function) != words.shown(top.function)][:2]
    others = [h for h in others if h.share >= th.HOT_FUNCTION_ALSO]
    text = words.hot_text(top, others, lo is not None and bool(lo.num_workers),
                          _comprehensions(hot, top.function))
    if lo is not None and lo.collate_loop and _hot_in_collate(ev, lo):
        text += words.collate_once_text(lo.collate_loop, lo.collate_loop_text or "", lo.dataset_class)
    return Fix(text=text, where=top.location)


def _comprehensions(hot: list[StackFrameShare], function: str) -> float:
    """The share of the samples in comprehensions `function` defines (its per-value Python)."""
    base = function.split(".<locals>", 1)[0]
    return sum(h.share for h in hot if h.function.startswith(base + ".<locals>.")
               and any(c in h.function for c in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")))


def own_code_fix(ev: Evidence, lo: LoaderInfo, workers_help: bool = True) -> Fix | None:
    """The loader's time in the dataset's own __getitem__ (no library work of a known kind beneath
    it). Where more workers are the lead fix, that work runs in every worker, and making it cheaper
    gains whatever their number (a per-element comprehension decoding each sample: 95% of the
    batches' time, where tensor ops on the whole sample take a hundredth); where the run's cores
    are in use (`workers_help` False), it is what must get cheaper (a text dataset tokenizing
    each review in a comprehension: 94% of the main process's loading samples, 1 or 2 workers
    slower than none)."""
    hot = _loader_hot(ev, lo)
    if not hot or hot[0].location != lo.dataset_getitem or _known(hot[0]):
        return None
    base = hot[0].function.split(".<locals>", 1)[0]
    mine = [h for h in hot if h.function.split(".<locals>", 1)[0] == base]  # it and what it defines
    inner = _comprehensions(mine, base)
    return Fix(text=words.own_code_text(base, lo.dataset_getitem or "", sum(h.share for h in mine), inner,
                                        bool(lo.num_workers), workers_help, lo.same_every_epoch,
                                        hot[0].beneath),
               where=lo.dataset_getitem)


def io_fix(lo: LoaderInfo) -> Fix:
    text = words.FIRST_READS_TEXT if first_epoch_reads(lo) is not None else words.IO_TEXT
    return Fix(text=text, where=lo.dataset_getitem or lo.site)


def pool_fix(ev: Evidence, lo: LoaderInfo) -> Fix | None:
    """The workers' native thread pools (numpy's BLAS, OpenCV) oversubscribe the cores: each worker
    computes on more threads than its own, and they wait for cores (WORKER_POOL_SHARE)."""
    c = ev.cpu
    nw = lo.num_workers or 0
    if c is None or nw < 1 or c.workers_pool_share is None or c.workers_pool_share < th.WORKER_POOL_SHARE:
        return None
    full = (c.cores_available is not None and c.tree_cores is not None
            and c.tree_cores >= th.WORKER_POOL_FULL * c.cores_available)
    if (c.per_worker_run_queue or 0.0) < th.WORKER_POOL_RUN_QUEUE and not full:
        return None
    return Fix(text=words.pool_text(nw, c.workers_pool_share, c.per_worker_run_queue, c.cores_available),
               where=lo.site)


def prefetch_fix(lo: LoaderInfo) -> Fix | None:
    if not lo.prefetch_factor:
        return None
    return Fix(text=words.PREFETCH_TEXT, where=lo.site,
               change={"prefetch_factor": [lo.prefetch_factor, lo.prefetch_factor * 2]})


def cheaper_fixes(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float,
                  collated: bool = False) -> tuple[list[Fix], str | None]:
    """Per-sample work that must get cheaper, by how much, and the fact that says why. `collated`:
    the time is torch's collate (collate_fix), not the dataset's __getitem__ nor augmentation."""
    nw = lo.num_workers or 0
    c = ev.cpu
    avail = c.cores_available if c and c.cores_available else None
    per_step = batches_per_step(ev, lo)
    compute = max(1e-9, w.mean_step_s - wait_s)
    if nw == 0 and w.wait_cpu_s is not None:
        cpu_per_batch: float | None = w.wait_cpu_s / w.n / per_step
    elif c and c.workers_cores is not None:
        cpu_per_batch = c.workers_cores * w.mean_step_s / per_step
    else:
        cpu_per_batch = None
    fixes: list[Fix] = []
    fact = None
    if cpu_per_batch is not None:
        # (batches the loop gathers into one: the step's batch is the batch the user sees)
        shown = cpu_per_batch * per_step if gathered_batches(ev, lo) > 1 else cpu_per_batch
        fact = words.cost_fact(shown, compute, cpu_per_batch * per_step / compute)
        target = compute / per_step
        # (batch_indexable: the batches indexed whole are the cheaper work, batch_index_fix says it)
        # (the script's own collate_fn the hot function: that is what must get cheaper)
        own_collate = _loader_hot(ev, lo)[0] if _hot_in_collate(ev, lo) else None
        if (cpu_per_batch > target and (lo.dataset_getitem is not None or own_collate is not None)
                and not collated and not lo.batch_indexable):
            known = (_known(own_collate) if own_collate is not None
                     else sample_work_known(ev, lo) is not None)
            fixes.append(Fix(text=words.cheaper_text(
                lo.dataset_class, cpu_per_batch / max(target, 1e-9), bool(lo.iterable), known,
                collate=words.shown(own_collate.function) if own_collate is not None else None),
                where=own_collate.location if own_collate is not None else lo.dataset_getitem))
    if lo.dataset_getitem is None and lo.dataset_class and not lo.iterable and lo.batch_indexable is None:
        # A library's map-style dataset (TensorDataset...): no __getitem__ of the user's to make
        # cheaper; the per-sample indexing and collation are the work, and a batch sampler removes them.
        fixes.append(Fix(text=words.batch_index_text(lo.dataset_class, lo.batch_size), where=lo.site))
    # (batch_indexable False: a library dataset that cannot take a list of indices; True: the
    # batch_index_fix leads instead.)
    elif (not sample_work_known(ev, lo) and not _hot_in_collate(ev, lo) and not collated
          and not lo.batch_indexable):  # (a TensorDataset's samples have no augmentation to batch)
        fixes.append(Fix(text=words.BATCHED_TEXT, where=lo.dataset_getitem or lo.site))
    if avail is not None and nw > avail and workers_compute(ev, lo):
        fixes.append(Fix(text=words.fewer_workers_text(nw, avail), where=lo.site,
                         change={"num_workers": [nw, max(1, int(avail))]}))
    return fixes, fact
