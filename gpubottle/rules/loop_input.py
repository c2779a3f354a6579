"""A loop with no DataLoader that makes its own batches (a generator, a list, a function): py-spy's
samples of the main thread tell how much of each step that takes, and in which function."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.worker_plan import plan_workers
from gpubottle.units import cores, ms, pct


def run_capacity(ev: Evidence, alone: bool = False) -> float | None:
    """Cores the run can actually have: those it may use, less what other programs took meanwhile
    (or, when only the machine's total is known, what the run does not account for). `alone`: as
    if nothing else ran."""
    c = ev.cpu
    if c is None or not c.cores_available:
        return None
    if alone:
        return c.cores_available
    taken = c.outside_cores or 0.0
    if c.system_cores is not None and c.tree_cores is not None and c.cores_logical and (
            c.cores_available >= c.cores_logical):
        taken = max(taken, c.system_cores - c.tree_cores - (c.supervisor_cores or 0.0))
    return max(min(1.0, c.cores_available), c.cores_available - taken)


def cpu_bound_step(ev: Evidence, w: Measured, alone: bool = False) -> float:
    """Everything the run computes per step over the cores it can have: no parallelism beats it."""
    c = ev.cpu
    capacity = run_capacity(ev, alone)
    if c is None or c.tree_cores is None or not capacity:
        return 0.0
    return c.tree_cores * w.mean_step_s / capacity


def generator_loop(ev: Evidence, w: Measured) -> list[Finding]:
    st = ev.stacks
    if st is None or st.main_loop_input_share is None or st.samples_main < th.MIN_STACK_SAMPLES:
        return []
    share = st.main_loop_input_share
    if share < th.INPUT_WAIT_INFO or share * w.mean_step_s < th.INPUT_WAIT_FLOOR_S:
        return []
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
    if c is not None and c.tree_cores is not None and c.cores_available:
        facts.append(Fact(f"the run uses {cores(c.tree_cores)} of the {cores(c.cores_available)} cores "
                          "it may use", "run_cores", round(c.tree_cores, 3)))
    severity = th.severity_for_share(share)
    t_batch = share * w.mean_step_s
    compute = max(1e-9, w.mean_step_s - t_batch)
    plan = plan_workers(0, compute, t_batch, cpu_bound_step(ev, w), cpu_bound_loading=True,
                        cores=c.cores_available if c else None)
    if w.mean_step_s / plan.step_s >= th.MIN_WORKER_SPEEDUP:
        gain = w.mean_step_s / plan.step_s
        fixes = [Fix(
            text=("" if plan.reliable else f"try (up to {gain:.1f}x, but {plan.busy_caveat()}): ")
            + "make batches in DataLoader workers, in parallel with the step: wrap the batch "
            f"generator in a torch.utils.data.IterableDataset and iterate "
            f"DataLoader(dataset, batch_size=None, num_workers={plan.workers}); each worker runs "
            "the dataset's __iter__, so give each its share of the batches "
            "(torch.utils.data.get_worker_info())",
            where=where,
            change={"num_workers": [0, plan.workers]},
            expected=f"step {ms(w.mean_step_s)} -> about {ms(plan.step_s)} ({gain:.1f}x)"
            if plan.reliable else None,
            expected_step_s=round(plan.step_s, 6) if plan.reliable else None,
        )]
        summary = (f"the loop makes its own batches {pct(share)} of the time while CPU capacity sits "
                   "unused: move batch making into DataLoader workers")
        return [Finding(v.DATA_STARVED, severity, round(share, 4), summary, facts, fixes)]
    fixes = [Fix(text=f"make the batch-making code cheaper: it costs {ms(t_batch)} per "
                 f"{ms(w.mean_step_s)} step and the run's CPU has no room to parallelise it",
                 where=where)]
    summary = (f"the loop makes its own batches {pct(share)} of the time and the CPU is already busy: "
               "the batch-making work must get cheaper")
    return [Finding(v.PREPROCESSING_BOUND, severity, round(share, 4), summary, facts, fixes)]
