"""A loop with no DataLoader that makes its own batches (a generator, a list, a function): py-spy's
samples of the main thread tell how much of each step that takes, and in which function. Also the
run's CPU capacity the input rules plan with."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle.evidence import CpuEvidence, Evidence, Measured, StackFrameShare
from gpubottle.rules import thresholds as th
from gpubottle.rules.input.plan import Plan, plan_workers


def cores_taken(c: CpuEvidence) -> float:
    """The cores other programs took during the run: those seen, or where the run may use every
    core, the machine's total less the run's and gpubottle's (which also counts processes too
    short-lived to be sampled)."""
    taken = c.outside_cores or 0.0
    if c.system_cores is not None and c.tree_cores is not None and c.cores_logical and (
            c.cores_available is not None and c.cores_available >= c.cores_logical):
        taken = max(taken, c.system_cores - c.tree_cores - (c.supervisor_cores or 0.0))
    return taken


def run_capacity(ev: Evidence, alone: bool = False) -> float | None:
    """Cores the run can actually have: those it may use, less what other programs took meanwhile
    (cores_taken). `alone`: as if nothing else ran."""
    c = ev.cpu
    if c is None or not c.cores_available:
        return None
    if alone:
        return c.cores_available
    return max(min(1.0, c.cores_available), c.cores_available - cores_taken(c))


def cpu_bound_step(ev: Evidence, w: Measured, alone: bool = False) -> float:
    """Everything the run computes per step over the cores it can have: no parallelism beats it."""
    c = ev.cpu
    capacity = run_capacity(ev, alone)
    if c is None or c.tree_cores is None or not capacity:
        return 0.0
    return c.tree_cores * w.mean_step_s / capacity


@dataclass
class LoopInput:
    """A loop with no DataLoader that spends `share` of its time making its own batches."""

    share: float
    samples: int  # the main thread's stack samples
    hot: StackFrameShare | None  # the function most of it is in
    run_cores: float | None  # the cores the run uses, of `cores_available`
    cores_available: float | None
    step_s: float
    plan: Plan  # DataLoader workers making the batches in parallel with the step

    @property
    def batch_s(self) -> float:
        return self.share * self.step_s

    @property
    def gain(self) -> float:
        return self.step_s / self.plan.step_s

    @property
    def parallel(self) -> bool:
        """Workers would gain enough: data-starved, with the workers' fix (else the batch-making
        must get cheaper: preprocessing-bound)."""
        return self.gain >= th.MIN_WORKER_SPEEDUP


def stack_input_share(ev: Evidence, w: Measured, share: float | None) -> float | None:
    """A share of the main thread's stack samples spent on the loop's input (making its batches,
    or waiting for a producer's), where there are enough samples and it is worth naming."""
    st = ev.stacks
    if st is None or share is None or st.samples_main < th.MIN_STACK_SAMPLES:
        return None
    if not th.input_wait_counts(share, share * w.mean_step_s):
        return None
    return share


def decide_generator_loop(ev: Evidence, w: Measured) -> LoopInput | None:
    st = ev.stacks
    share = stack_input_share(ev, w, st.main_loop_input_share if st is not None else None)
    if st is None or share is None:
        return None
    c = ev.cpu
    t_batch = share * w.mean_step_s
    plan = plan_workers(0, max(1e-9, w.mean_step_s - t_batch), t_batch, cpu_bound_step(ev, w),
                        cpu_bound_loading=True, cores=c.cores_available if c else None)
    return LoopInput(share, st.samples_main, st.main_hot[0] if st.main_hot else None,
                     c.tree_cores if c is not None else None, c.cores_available if c is not None else None,
                     w.mean_step_s, plan)
