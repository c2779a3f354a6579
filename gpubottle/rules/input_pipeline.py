"""data-starved vs preprocessing-bound: the loop waits for batches; is there CPU left to make them?"""

from __future__ import annotations

import math
from typing import Any

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import Window, cores, enough_steps, main_loader, ms, pct, window
from gpubottle.rules.gpu import breakdown_fact


def _loader_busy(ev: Evidence, w: Window, lo: LoaderInfo) -> tuple[float | None, str]:
    """Busy fraction of one core for whoever makes the batches, while the loop waits."""
    if not lo.num_workers:
        if w.wait_cpu_s is None or w.wait_s <= 0:
            return None, "main process"
        return w.wait_cpu_s / w.wait_s, "main process"
    if ev.cpu is None or ev.cpu.per_worker_cores is None:
        return None, "workers"
    return ev.cpu.per_worker_cores, "workers"


def _spare_cores(ev: Evidence) -> float | None:
    c = ev.cpu
    if c is None or c.cores_available is None or c.tree_cores is None:
        return None
    spare = c.cores_available - c.tree_cores - (c.outside_cores or 0.0)
    # When the run may use the whole machine, its busy time bounds what is spare: per-process
    # accounting misses some of it (kernel threads, a hypervisor's steal, short-lived processes).
    if c.system_cores is not None and c.cores_logical and c.cores_available >= c.cores_logical:
        spare = min(spare, c.cores_logical - c.system_cores)
    return spare


def _batch_time(ev: Evidence, w: Window, lo: LoaderInfo) -> tuple[float, float]:
    """(time one loader takes to make one batch, batches the loop takes per step)."""
    nw = lo.num_workers or 0
    batches_per_step = max(1.0, lo.batches / max(1, len(ev.steps.durations_s)))
    if nw == 0:
        return w.mean_wait_s / batches_per_step, batches_per_step  # synchronous: the wait is the work
    return nw * w.mean_step_s / batches_per_step, batches_per_step  # starved: one per worker per nw steps


def _loop(ev: Evidence) -> str:
    """An inference loop (no backward, no optimizer) is not called a training loop."""
    return "the training loop" if ev.steps.source in ("optimizer", "backward", "profiler") else "the loop"


def _receive_s(w: Window, lo: LoaderInfo) -> float | None:
    """Main-process CPU per step spent taking batches from workers (None without workers)."""
    if not lo.num_workers or w.wait_cpu_s is None or w.n == 0:
        return None
    return w.wait_cpu_s / w.n


def _receiving_s(w: Window, lo: LoaderInfo) -> float | None:
    """That receiving cost, when it is a large part of the wait (MAIN_RECEIVE_SHARE or more)."""
    recv_s = _receive_s(w, lo)
    return recv_s if recv_s is not None and recv_s >= th.MAIN_RECEIVE_SHARE * w.mean_wait_s else None


def _receive_fix(ev: Evidence, w: Window, lo: LoaderInfo) -> Fix | None:
    recv_s = _receiving_s(w, lo)
    if recv_s is None:
        return None
    _, per_step = _batch_time(ev, w, lo)
    spare = _spare_cores(ev)
    busy = spare is not None and spare < th.SPARE_CORES_MIN
    return Fix(
        text=f"taking each batch from the workers costs the main process {ms(recv_s / per_step)} of "
        "CPU, which more workers cannot remove: return one tensor per sample (not many small "
        "tensors or Python objects), or build whole batches inside the dataset "
        "(DataLoader(batch_size=None)) so one transfer carries a batch"
        + ("; on a CPU this busy, also time num_workers=0, which has no transfer at all"
           if busy else ""),
        where=lo.dataset_getitem or lo.site,
    )


def _spare_fact(ev: Evidence, spare: float | None) -> Fact | None:
    c = ev.cpu
    if spare is None or c is None or c.cores_available is None or c.tree_cores is None:
        return None
    return Fact(f"the run uses {cores(c.tree_cores)} of {cores(c.cores_available)} available cores on "
                f"average; {cores(max(0.0, spare))} idle (counting the machine's other work)",
                "spare_cores", round(spare, 3))


def _worker_plan(ev: Evidence, w: Window, lo: LoaderInfo, busy: float | None) -> tuple[int, int, int]:
    """(needed, recommended, cap): workers to hide the wait, what fits, and the fitting limit."""
    nw = lo.num_workers or 0
    t_batch, batches_per_step = _batch_time(ev, w, lo)
    needed = max(1, math.ceil(th.WORKER_MARGIN * batches_per_step * t_batch / w.compute_s))
    c = ev.cpu
    avail = c.cores_available if c and c.cores_available else None
    if avail is None:
        cap = th.MAX_WORKERS_UNKNOWN_CPU
    else:
        main = c.main_cores if (c and c.main_cores is not None) else 1.0
        if nw == 0 and w.wait_cpu_s is not None and w.total_s > w.wait_s:
            # The main process's CPU while computing, without the loading it does today.
            main = max(0.0, (main * w.total_s - w.wait_cpu_s) / (w.total_s - w.wait_s))
        budget = avail - main - ((c.outside_cores or 0.0) if c else 0.0)
        per = max(busy if busy is not None else 1.0, th.WORKER_MIN_BUSY)
        if busy is not None and busy < th.LOADER_IO_BOUND_BUSY:
            budget = max(budget, 1.0)  # workers that mostly wait fit beside a busy main process
        cap = max(1, min(th.MAX_WORKERS_IO, math.floor(budget / per + 1e-6)))
    # Off the main process, two workers at least: one alone stalls the loop whenever a batch is slow.
    needed = max(needed, 2) if nw == 0 else needed
    recommended = max(nw + 1, min(needed, cap)) if needed > nw else nw
    return needed, recommended, cap


def _persistent_fix(lo: LoaderInfo, w: Window, recommended: int) -> Fix | None:
    if lo.persistent_workers or recommended == 0 or lo.iterators < 2:
        return None
    restarts = lo.first_batch_waits_s[1:]
    if not restarts:
        return None
    cost = sum(restarts) / len(restarts)
    if cost < max(th.RESTART_COST_FACTOR * w.mean_wait_s, th.RESTART_COST_MIN_S):
        return None
    return Fix(
        text=f"keep workers alive between epochs: each new epoch waited {ms(cost)} for its first "
        "batch while workers started again",
        where=lo.site,
        change={"persistent_workers": [lo.persistent_workers, True]},
        expected=f"saves about {ms(cost)} per epoch",
    )


def _loader_text(lo: LoaderInfo) -> str:
    where = f"DataLoader at {lo.site}" if lo.site else "DataLoader"
    known = [f"num_workers={lo.num_workers}" if lo.num_workers is not None else
             "num_workers>0 (multi-process)"]
    if lo.batch_size is not None:
        known.append(f"batch_size={lo.batch_size}")
    if lo.dataset_class:
        known.append(f"dataset {lo.dataset_class}")
    return f"{where}: " + ", ".join(known)


def _hot_fix(ev: Evidence, lo: LoaderInfo | None) -> Fix | None:
    """The user function where the loader's time goes, from py-spy samples."""
    st = ev.stacks
    if st is None:
        return None
    in_workers = lo is not None and bool(lo.num_workers)
    hot = st.worker_hot if in_workers else st.main_hot
    if not hot or hot[0].share < th.HOT_FUNCTION_SHARE:
        return None
    top = hot[0]
    if lo is not None and top.location == lo.dataset_getitem:
        return None  # __getitem__ itself: the other fixes already point there
    whose = "the loader workers' time" if in_workers else "the time spent making batches"
    others = ", ".join(f"{h.function} {h.share:.0%}" for h in hot[1:3] if h.share >= th.HOT_FUNCTION_ALSO)
    return Fix(
        text=f"{top.function} ({top.location}) takes {top.share:.0%} of {whose}: make it cheaper first"
        + (f" (then {others})" if others else ""),
        where=top.location,
    )


def generator_loop(ev: Evidence, w: Window) -> list[Finding]:
    """No DataLoader: the loop makes its own batches (a generator, a list, a function). py-spy's
    samples of the main thread tell how much of each step that takes, and in which function."""
    st = ev.stacks
    if st is None or st.main_loop_input_share is None or st.samples_main < th.MIN_STACK_SAMPLES:
        return []
    share = st.main_loop_input_share
    if share < th.INPUT_WAIT_INFO or share * w.mean_step_s < th.INPUT_WAIT_FLOOR_S:
        return []
    spare = _spare_cores(ev)
    c = ev.cpu
    hot = st.main_hot[0] if st.main_hot else None
    where = hot.location if hot else None
    facts = [
        Fact(f"no DataLoader: the main process spends {pct(share)} of its time making the next batch "
             f"in the loop itself ({st.samples_main} stack samples)", "input_share", round(share, 4)),
    ]
    if hot is not None:
        facts.append(Fact(f"most of it in {hot.function} ({hot.location}): {pct(hot.share)} of those "
                          "samples", "hot_share", hot.share))
    spare_fact = _spare_fact(ev, spare)
    if spare_fact is not None:
        facts.append(spare_fact)
    severity = th.severity_for_share(share)
    t_batch = share * w.mean_step_s
    compute = max(1e-9, w.mean_step_s - t_batch)
    if spare is not None and spare >= th.SPARE_CORES_MIN:
        avail = c.cores_available if c and c.cores_available else 2.0
        needed = max(1, math.ceil(th.WORKER_MARGIN * t_batch / compute))
        rec = max(1, min(needed, math.floor(spare + 1e-6)))
        new_step = max(compute, t_batch / rec)
        fixes = [Fix(
            text=f"make batches in DataLoader workers, in parallel with the step: wrap the batch "
            f"generator in a torch.utils.data.IterableDataset and iterate "
            f"DataLoader(dataset, batch_size=None, num_workers={rec})"
            + ("" if rec >= needed else f" ({needed} would hide it entirely; {cores(avail)} cores)"),
            where=where,
            change={"num_workers": [0, rec]},
            expected=f"step {ms(w.mean_step_s)} -> about {ms(new_step)} ({w.mean_step_s / new_step:.1f}x)",
            expected_step_s=round(new_step, 6),
        )]
        summary = (f"the loop makes its own batches {pct(share)} of the time while CPU capacity sits "
                   "unused: move batch making into DataLoader workers")
        return [Finding(v.DATA_STARVED, severity, round(share, 4), summary, facts, fixes)]
    fixes = [Fix(text=f"make the batch-making code cheaper: it costs {ms(t_batch)} per "
                 f"{ms(w.mean_step_s)} step and the CPU has no idle cores to parallelise it", where=where)]
    summary = (f"the loop makes its own batches {pct(share)} of the time and the CPU is already busy: "
               "the batch-making work must get cheaper")
    return [Finding(v.PREPROCESSING_BOUND, severity, round(share, 4), summary, facts, fixes)]


def input_pipeline(ev: Evidence) -> list[Finding]:
    w = window(ev)
    lo = main_loader(ev)
    if w is None or not enough_steps(ev, w):
        return []
    if lo is None:
        return generator_loop(ev, w)
    share = w.wait_share
    if share < th.INPUT_WAIT_INFO or w.mean_wait_s < th.INPUT_WAIT_FLOOR_S:
        return []
    nw = lo.num_workers or 0
    busy, who = _loader_busy(ev, w, lo)
    spare = _spare_cores(ev)
    c = ev.cpu
    avail = c.cores_available if c else None
    facts = [
        Fact(
            f"the loop waits {ms(w.mean_wait_s)} for its batch in a {ms(w.mean_step_s)} step "
            f"({pct(share)} of step time, {w.n} steps measured)",
            "input_wait_share",
            round(share, 4),
        ),
        Fact(_loader_text(lo)),
    ]
    if ev.gpu is not None and ev.gpu.breakdown:
        facts.append(breakdown_fact(ev.gpu))
    if busy is not None:
        facts.append(
            Fact(f"while the loop waits, the {who} are busy {pct(busy)} of a core each"
                 if nw else f"while the loop waits, the main process is busy {pct(busy)} of a core "
                 "loading the batch itself", "loader_busy", round(busy, 3))
        )
    spare_fact = _spare_fact(ev, spare)
    if spare_fact is not None:
        facts.append(spare_fact)
    # Low loader CPU means waiting on I/O, unless the loader was waiting for a CPU instead: the
    # workers' run-queue time says which; without it, a saturated machine makes it CPU starvation.
    rq = c.per_worker_run_queue if (c is not None and nw) else None
    if rq is not None and rq >= th.RUN_QUEUE_MENTION:
        facts.append(Fact(f"the workers waited for a free core {pct(rq)} of the time (run queue)",
                          "worker_run_queue", round(rq, 3)))
    if rq is not None:
        starved_of_cpu = rq >= th.LOADER_CPU_STARVED
    else:
        starved_of_cpu = spare is not None and spare < th.SPARE_CORES_MIN
    recv_s = _receiving_s(w, lo)
    receiving = recv_s is not None
    if recv_s is not None:
        facts.append(Fact(f"the main process itself is busy {pct(recv_s / w.mean_wait_s)} of that wait "
                          "taking batches from the workers", "main_receive_share",
                          round(recv_s / w.mean_wait_s, 3)))
    # Idle workers and a waiting loop: I/O, unless the loop's wait is its own receiving work.
    io_bound = (busy is not None and busy < th.LOADER_IO_BOUND_BUSY and not starved_of_cpu
                and not receiving)
    open_q = None
    if io_bound:
        category = v.DATA_STARVED
    elif rq is not None and starved_of_cpu:
        category = v.PREPROCESSING_BOUND  # the workers already queue for a core: no CPU to add
    elif spare is not None and spare >= th.SPARE_CORES_MIN:
        category = v.DATA_STARVED
    elif spare is None:
        category = v.DATA_STARVED if nw + 1 < (avail or 2) else v.PREPROCESSING_BOUND
        other = v.PREPROCESSING_BOUND if category == v.DATA_STARVED else v.DATA_STARVED
        open_q = (f"the CPU use of the loader was not measured (a trace does not record it), so "
                  f"{other} is not ruled out: if the CPU is already saturated, more workers will not "
                  "help; `gpubottle run` measures it")
    else:
        category = v.PREPROCESSING_BOUND
    severity = th.severity_for_share(share)
    if category == v.DATA_STARVED:
        return [_starved(ev, w, lo, busy, io_bound, share, severity, facts, open_q)]
    return [_preprocessing(ev, w, lo, busy, share, severity, facts, open_q)]


def _starved(
    ev: Evidence, w: Window, lo: LoaderInfo, busy: float | None, io_bound: bool, share: float,
    severity: str, facts: list[Fact], open_q: str | None,
) -> Finding:
    nw = lo.num_workers or 0
    needed, rec, cap = _worker_plan(ev, w, lo, busy)
    fixes: list[Fix] = []
    if lo.num_workers is None:  # a trace shows a multi-process loader, not its worker count
        fixes.append(Fix(text="the loop waits on a multi-process DataLoader: raise num_workers (the "
                              "trace does not record how many it has), or prefetch_factor"))
    elif rec > nw:
        # Predicted step once `rec` workers overlap loading with compute.
        t_batch, per_step = _batch_time(ev, w, lo)
        # Receiving batches stays on the main process, however many workers make them.
        floor = w.compute_s + (_receive_s(w, lo) or 0.0)
        new_step = max(floor, per_step * t_batch / rec)
        new_share = max(0.0, (new_step - w.compute_s) / new_step)
        change: dict[str, list[Any]] = {"num_workers": [nw, rec]}
        if not lo.persistent_workers and lo.iterators >= 2:
            change["persistent_workers"] = [False, True]
        if needed <= rec:
            if io_bound:
                why = " (loading waits on I/O, so workers overlap it without needing a core each)"
            elif ev.cpu is None or ev.cpu.cores_available is None:
                why = f" (enough to make batches faster than the {ms(w.compute_s)} step uses them)"
            else:
                why = f" ({rec} fit in the idle cores)"
        else:
            why = (f" (the wait would vanish at about {needed}, but only {cap} fit in the CPU left "
                   "over: the rest must come from cheaper loading)")
        fixes.append(Fix(
            text=f"load batches in parallel with the training step: num_workers={rec}{why}",
            where=lo.site,
            change=change,
            expected=f"step {ms(w.mean_step_s)} -> about {ms(new_step)} "
            f"({w.mean_step_s / new_step:.1f}x), input wait {pct(share)} -> {pct(new_share)}",
            expected_step_s=round(new_step, 6),
        ))
    elif io_bound and lo.prefetch_factor:
        fixes.append(Fix(
            text="workers are idle on I/O: prefetch deeper so slow reads overlap",
            where=lo.site,
            change={"prefetch_factor": [lo.prefetch_factor, lo.prefetch_factor * 2]},
        ))
    recv_fix = _receive_fix(ev, w, lo)
    if recv_fix is not None:
        fixes.append(recv_fix)
    hot = _hot_fix(ev, lo)
    if hot is not None:
        fixes.append(hot)
    pf = _persistent_fix(lo, w, rec)
    if pf is not None and not any("persistent_workers" in f.change for f in fixes):
        fixes.append(pf)
    if io_bound:
        fixes.append(Fix(
            text="the time is in reading, not computing: read from local disk or memory, or cache "
            "samples after the first epoch",
            where=lo.dataset_getitem,
        ))
    unused = " while CPU capacity sits unused" if open_q is None else ""
    summary = (
        f"{_loop(ev)} waits for data {pct(share)} of the time{unused}"
        + (f"; the loader is blocked on I/O ({pct(busy or 0)} busy)" if io_bound else "")
        + ("; batches are made in the training process itself (num_workers=0)"
           if lo.num_workers == 0 and open_q is not None else "")
    )
    return Finding(v.DATA_STARVED, severity, round(share, 4), summary, facts, fixes, open_q)


def _preprocessing(
    ev: Evidence, w: Window, lo: LoaderInfo, busy: float | None, share: float, severity: str,
    facts: list[Fact], open_q: str | None,
) -> Finding:
    nw = lo.num_workers or 0
    c = ev.cpu
    avail = c.cores_available if c and c.cores_available else None
    batches_per_step = max(1.0, lo.batches / max(1, len(ev.steps.durations_s)))
    if nw == 0 and w.wait_cpu_s is not None:
        cpu_per_batch = w.wait_cpu_s / w.n / batches_per_step
    elif c and c.workers_cores is not None:
        cpu_per_batch = c.workers_cores * w.mean_step_s / batches_per_step
    else:
        cpu_per_batch = None
    fixes: list[Fix] = []
    recv_fix = _receive_fix(ev, w, lo)
    if recv_fix is not None:
        fixes.append(recv_fix)
    hot = _hot_fix(ev, lo)
    if hot is not None:
        fixes.append(hot)
    if cpu_per_batch is not None:
        need = cpu_per_batch * batches_per_step / w.compute_s
        left = ""
        if avail and c is not None and c.main_cores is not None and w.total_s > w.wait_s:
            step_cpu = (c.main_cores * w.total_s - (w.wait_cpu_s or 0.0)) / (w.total_s - w.wait_s)
            left = (f"; the training step itself keeps {cores(step_cpu)} of the {cores(avail)} "
                    f"available cores busy, leaving {cores(max(0.0, avail - step_cpu))}")
        facts.append(Fact(
            f"each batch costs {ms(cpu_per_batch)} of CPU to prepare; to keep up with a "
            f"{ms(w.compute_s)} step the pipeline needs {cores(need)} cores{left}",
            "cpu_per_batch_s", round(cpu_per_batch, 6),
        ))
        target = w.compute_s / batches_per_step
        if cpu_per_batch > target:
            fixes.append(Fix(
                text=f"make per-sample work cheaper: {lo.dataset_class or 'the dataset'}.__getitem__ must "
                f"get about {cpu_per_batch / max(target, 1e-9):.1f}x cheaper per batch for the loop to "
                "stop waiting (cache decoded samples, decode at lower resolution, drop work that is "
                "repeated every epoch)",
                where=lo.dataset_getitem,
            ))
    fixes.append(Fix(
        text="move augmentation to batched tensor ops after collation (or onto the GPU), where one "
        "call handles the whole batch instead of Python per sample",
        where=lo.dataset_getitem,
    ))
    if avail is not None and nw > avail:
        fixes.append(Fix(
            text=f"num_workers={nw} exceeds the {cores(avail)} cores available: extra workers only "
            "add switching and memory",
            where=lo.site,
            change={"num_workers": [nw, max(1, int(avail) - 1)]},
        ))
    summary = (
        f"{_loop(ev)} waits for data {pct(share)} of the time and the input pipeline already "
        "uses the CPU it has: the per-sample work must get cheaper"
    )
    return Finding(v.PREPROCESSING_BOUND, severity, round(share, 4), summary, facts, fixes, open_q)
