"""The fixes for a loop that waits for its batches, each computed from the measurements: keep
workers alive across epochs, more workers (with the step they should give), cheaper batches.

A fix that promises a number (`expected`) is one a test applies and times; a change that may not
help (fewer workers, num_workers=0) is worded as something to try and measure, never as advice.
"""

from __future__ import annotations

from typing import Any

from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.contention_decision import named_outside
from gpubottle.rules.worker_plan import Plan
from gpubottle.units import cores, ms, pct


def batches_per_step(ev: Evidence, lo: LoaderInfo) -> float:
    return max(1.0, lo.batches / max(1, len(ev.steps.durations_s)))


def receive_s(w: Measured, lo: LoaderInfo) -> float | None:
    """Main-thread CPU per step spent taking batches from workers (None without workers)."""
    if not lo.num_workers or w.wait_cpu_s is None or w.n == 0:
        return None
    return w.wait_cpu_s / w.n


def receiving_s(w: Measured, lo: LoaderInfo, wait_s: float) -> float | None:
    """That receiving cost, when it is a large part of the wait (MAIN_RECEIVE_SHARE or more)."""
    recv = receive_s(w, lo)
    return recv if recv is not None and recv >= th.MAIN_RECEIVE_SHARE * wait_s else None


def restart_fix(lo: LoaderInfo, w: Measured, start_up_s: float, epochs: int) -> Fix:
    """Workers start again every epoch: the DataLoader is rebuilt, or its workers do not persist."""
    new_step = w.mean_step_s - start_up_s
    expected = (f"step {ms(w.mean_step_s)} -> about {ms(new_step)} "
                f"({w.mean_step_s / new_step:.1f}x), about {ms(start_up_s * w.n / max(1, epochs))} "
                "saved per epoch")
    if lo.builds > 1:
        text = (f"the DataLoader at {lo.site or 'its construction site'} is built anew {lo.builds} "
                "times (every epoch), so its workers start again every epoch"
                + (" (spawn: each re-imports the script and torch)" if lo.start_method == "spawn"
                   else "")
                + ": build it once, before the epoch loop, with persistent_workers=True "
                "(persistent_workers alone, on a loader still built every epoch, changes nothing)")
    else:
        text = ("the DataLoader's workers stop at the end of every epoch and start again for the "
                "next: keep them alive with persistent_workers=True")
    change: dict[str, list[Any]] = {"persistent_workers": [bool(lo.persistent_workers), True]}
    return Fix(text=text, where=lo.site, change=change, expected=expected,
               expected_step_s=round(new_step, 6))


def worker_fix(ev: Evidence, w: Measured, lo: LoaderInfo, plan: Plan, io_bound: bool, start_up_s: float,
               wait_share: float) -> Fix:
    nw = lo.num_workers or 0
    c = ev.cpu
    if plan.needed > plan.workers:
        why = (f" (the wait would vanish at about {plan.needed}, but the CPU the run has limits the "
               "gain: the rest must come from cheaper loading)" if plan.limit == "cpu" else
               f" (about {plan.needed} would hide the wait entirely)")
    elif io_bound:
        why = " (loading waits on I/O, so workers overlap it without needing a core each)"
    elif c is None or c.cores_available is None:
        why = " (enough to make batches faster than the step uses them)"
    else:
        why = f" (the {cores(c.cores_available)} cores the run may use have room for them)"
    if c is not None and named_outside(c) >= th.OUTSIDE_CORES_WARNING:
        why += (f"; other programs used {cores(named_outside(c))} cores meanwhile: while they "
                "run, expect less")
    new_step = plan.step_s + start_up_s  # workers starting each epoch are a fix of their own
    compute = w.mean_step_s - w.mean_wait_s
    new_share = max(0.0, (new_step - start_up_s - compute) / new_step)
    change: dict[str, list[Any]] = {"num_workers": [nw, plan.workers]}
    caveat = None
    if c is not None and c.ranks_sharing > 1:
        # Measured on 2 gloo ranks sharing 2 cores: 50-65% of the predicted gain (7.0x predicted,
        # 4.5x measured): the other ranks' workers and the collectives compete for the same cores.
        caveat = (f"the {c.ranks_sharing} ranks on this machine share its cores and their workers "
                  "compete (set it on every rank: they run the same code): time it")
    elif not io_bound and not plan.reliable:
        caveat = plan.busy_caveat()
    shard = ""
    if lo.iterable and not lo.shards:
        # Every worker runs the IterableDataset's __iter__ whole: unsplit, each record is read (and
        # trained on) num_workers times (measured: 4 workers, 13.4 s and every sample 4 times;
        # split with get_worker_info(), 5.3 s and every sample once).
        shard = (f"; first give each worker its share of the stream (in {lo.dataset_class or 'the '}"
                 f"{'.' if lo.dataset_class else ''}__iter__: info = torch.utils.data.get_worker_info(), "
                 "then keep the records where i % info.num_workers == info.id), or every worker "
                 "reads all of it and each record is trained on num_workers times")
    if caveat is not None:
        return Fix(
            text=f"try num_workers={plan.workers}: loading in parallel with the step could make it up to "
            f"{w.mean_step_s / new_step:.1f}x faster, but {caveat}{shard}",
            where=lo.site, change=change)
    return Fix(
        text=f"load batches in parallel with the training step: num_workers={plan.workers}{why}{shard}",
        where=lo.site,
        change=change,
        expected=("once each worker reads its own share: " if shard else "")
        + f"step {ms(w.mean_step_s)} -> about {ms(new_step)} ({w.mean_step_s / new_step:.1f}x), "
        f"input wait {pct(wait_share)} -> {pct(new_share)}",
        expected_step_s=round(new_step, 6),
    )


def receive_fix(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float, saturated: bool) -> Fix | None:
    recv = receiving_s(w, lo, wait_s)
    if recv is None:
        return None
    return Fix(
        text=f"taking each batch from the workers costs the main process "
        f"{ms(recv / batches_per_step(ev, lo))} of CPU, which more workers cannot remove: return one "
        "tensor per sample (not many small tensors or Python objects), or build whole batches inside "
        "the dataset (DataLoader(batch_size=None)) so one transfer carries a batch"
        + ("; on a CPU this busy, also try num_workers=0 (no transfer at all) and compare"
           if saturated else ""),
        where=lo.dataset_getitem or lo.site,
    )


def hot_fix(ev: Evidence, lo: LoaderInfo | None) -> Fix | None:
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


def io_fix(lo: LoaderInfo) -> Fix:
    return Fix(text="the time is in reading, not computing: read from local disk or memory, or cache "
                    "samples after the first epoch", where=lo.dataset_getitem)


def prefetch_fix(lo: LoaderInfo) -> Fix | None:
    if not lo.prefetch_factor:
        return None
    return Fix(text="workers are idle on I/O: prefetch deeper so slow reads overlap (try it and "
                    "compare)", where=lo.site,
               change={"prefetch_factor": [lo.prefetch_factor, lo.prefetch_factor * 2]})


def cheaper_fixes(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float) -> tuple[list[Fix], str | None]:
    """Per-sample work that must get cheaper, by how much, and the fact that says why."""
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
        need = cpu_per_batch * per_step / compute
        fact = (f"each batch costs {ms(cpu_per_batch)} of CPU to prepare; to keep up with a "
                f"{ms(compute)} step the pipeline needs {cores(need)} cores")
        target = compute / per_step
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
            text=f"num_workers={nw} is more than the {cores(avail)} cores available: if the workers "
            "compute rather than wait, fewer may do as well with less memory; try it and compare",
            where=lo.site,
            change={"num_workers": [nw, max(1, int(avail))]},
        ))
    return fixes, fact
