"""How many DataLoader workers, and what step time to expect with them: a prediction the fix prints
and a test times after applying it.

With k workers, batches are made beside the step instead of inside it, and the step becomes the
slowest of three limits:

- the loop's own work: compute, plus taking each batch from the workers (unpickling), which stays
  on the main thread however many workers there are;
- production: the time one worker takes per batch, over k;
- the CPU: everything the run computes per step (the model's math and the loading, wherever it
  runs), over the cores the run may use. Moving loading out of the main thread frees its time, not
  the CPU the loading needs: on a machine whose cores the math already fills, workers compete with
  it.

The cores are those the run can have: other programs' load takes its share (and is named in a
finding of its own, cpu-contention). Loading that waits on I/O needs no core per worker, so that
load changes only the CPU limit, not the advice to overlap the waits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpubottle.rules import thresholds as th
from gpubottle.units import pct


@dataclass
class Plan:
    workers: int  # recommended num_workers
    step_s: float  # predicted mean step with them
    needed: int  # workers that would hide the production limit entirely
    limit: str  # what limits the predicted step: compute | production | cpu
    load: float = 0.0  # the run's cores busy at the predicted step (CPU per step / cores / step)

    @property
    def reliable(self) -> bool:
        """Whether the predicted step is a number to promise: on cores this busy, workers and the
        loop share them and handing batches between processes costs a part the model leaves out."""
        return self.load < th.PREDICT_MAX_CPU_LOAD

    def busy_caveat(self) -> str:
        """Why an unreliable plan is an experiment, in the words both worker fixes use."""
        return (f"the cores would be {pct(min(1.0, self.load))} busy, where sharing them with the loop "
                "and handing batches between processes cost an unknown part of the gain, or more "
                "(it can end slower than now): time it")


def predict_step(k: int, compute_s: float, per_step_batch_s: float, cpu_bound_s: float) -> tuple[float, str]:
    """(predicted step, its limit) with k workers making batches."""
    limits = {"compute": compute_s, "production": per_step_batch_s / max(1, k), "cpu": cpu_bound_s}
    limit = max(limits, key=lambda name: limits[name])
    return limits[limit], limit


def plan_workers(current: int, compute_s: float, per_step_batch_s: float, cpu_bound_s: float,
                 cpu_bound_loading: bool, cores: float | None) -> Plan:
    """The smallest worker count whose production keeps up with the other limits (with a margin),
    at least one more than today and two when moving loading off the main process (one worker alone
    stalls the loop whenever a batch is slow). Loading that waits on I/O needs no core per worker;
    loading that computes gains nothing from more workers than cores."""
    floor_s = max(compute_s, cpu_bound_s)
    needed = max(1, math.ceil(th.WORKER_MARGIN * per_step_batch_s / max(floor_s, 1e-9)))
    if cpu_bound_loading:
        cap = max(2, math.floor(cores)) if cores else th.MAX_WORKERS_UNKNOWN_CPU
    else:
        cap = th.MAX_WORKERS_IO
    low = max(current + 1, 2 if current == 0 else 1)
    # Already at the cap (as many computing workers as cores, or more): more would only queue.
    k = current if current >= cap else max(low, min(needed, cap))
    step, limit = predict_step(k, compute_s, per_step_batch_s, cpu_bound_s)
    load = cpu_bound_s / step if cpu_bound_loading and step > 0 else 0.0
    return Plan(workers=k, step_s=step, needed=needed, limit=limit, load=load)
