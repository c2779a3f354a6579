"""The one step clock, and the one definition of the steps a statistic may use.

The same `StepClock` counts steps live in the script's process (--steps, the profiler window's start,
the step probes), in the supervisor's status line, and afterwards when the analysis replays the
event file in order: whatever counted step N live is step N in the report.

Which events make a step, the most specific the script gives:
  - optimizer steps: a step ends when an optimizer steps that already stepped in the current
    iteration (or the first time any steps), or one built since that iteration began steps for the
    first time. One optimizer: every step() is a boundary. A GAN's D-then-G iteration is one step,
    not two; gradient accumulation (several backward calls per step()) is one step; a script that
    trains with optimizer A, then with B, counts both phases; a loop that builds its optimizer anew
    every iteration (a bug: its state starts over each step) still counts each step.
  - backward calls, when the script built no torch.optim optimizer (a hand-written update). If it
    built one that never stepped, the analysis falls back to backward calls at the end; live,
    --steps then waits for an optimizer step that never comes (the report still has the steps).
  - DataLoader fetches, in loops with neither (inference): a step runs from one fetch to the next.

Measured steps: after warm-up, without steps slowed by gpubottle's own heavier probes, without those
run with its hooks off to measure them (their times are a block's mean), and without pauses (a step
this many times the median that was not spent waiting for data, once evaluation passes and
checkpoints are carved out). Every statistic and every rule reads `measured_indices`.
"""

from __future__ import annotations

import math
from array import array

MAX_WARMUP = 10
# Fewer measured steps than this (after warm-up) and the verdict is `inconclusive`; a trial's
# setting gets no number. A profiler trace records every event of the steps it holds, so there one
# complete step is already a measurement.
MIN_MEASURED = 5
MIN_TRACE_STEPS = 1
# Fewer steps on a side than this and a comparison's interval means nothing (the gate).
MIN_COMPARED = 3
# A step this many times the median, longer than PAUSE_MIN_S, and not spent waiting for data (nor
# in evaluation or a checkpoint, which the account carves out first), is a pause: left out of step
# statistics, shown in the account as time between steps.
PAUSE_FACTOR = 10.0
PAUSE_MIN_S = 0.05
# On the device's own clock, the host runs ahead of the GPU when, at its steps' ends (median), it has
# queued this share of a step or more that the GPU has not run yet, and the GPU does not then sit
# waiting for input HOST_AHEAD_IDLE of the step or more (a loop that queues its step's work at the
# end and then waits for data has the backlog too; the share where an input wait becomes a
# warning): the GPU sets the pace, and the host's time in its calls is mostly waiting for it.
HOST_AHEAD = 0.5
HOST_AHEAD_IDLE = 0.15
# The device's clock speaks for the measured steps when it saw this share of them, or a sample
# spread over all of them: at least DEVICE_SAMPLE_MIN steps, some in every DEVICE_SAMPLE_PARTS-th of
# the run (its budget leaves steps unseen, evenly; a clock that started late or broke down does not
# cover a part).
DEVICE_COVERAGE = 0.8
DEVICE_SAMPLE_MIN = 20
DEVICE_SAMPLE_PARTS = 5


def device_covers(seen: list[int], keep: list[int]) -> bool:
    """Whether the steps the device's clock saw (`seen`, indices among `keep`) speak for `keep`."""
    if not keep or not seen:
        return False
    if len(seen) >= DEVICE_COVERAGE * len(keep):
        return True
    if len(seen) < DEVICE_SAMPLE_MIN:
        return False
    pos = {k: j for j, k in enumerate(keep)}
    parts = {pos[i] * DEVICE_SAMPLE_PARTS // len(keep) for i in seen if i in pos}
    return len(parts) == DEVICE_SAMPLE_PARTS


def device_input_wait(device: float, lag: float, fetch_idle: float | None, host: float, wait: float) -> float:
    """One step's input wait on the device's clock: what hiding the host's wait would win back. The
    step would take the larger of the host's own work (its step less its wait) and the device's
    work (at least the backlog it had at the step's end); the wait costs the rest, never less than
    the device's idle time around the fetches, never more than the host's wait."""
    hidden = max(0.0, device - max(host - wait, min(lag, device)))
    return min(wait, max(fetch_idle or 0.0, hidden))


def host_ahead(device_s: list[float | None], lag_s: list[float | None], idle_s: list[float | None],
               host_s: list[float], wait_s: list[float], keep: list[int]) -> float | None:
    """The host's median lead over the GPU at the measured steps' ends when it runs ahead (None when
    it does not, or the device's clock did not see the steps)."""
    seen: list[tuple[float, float, float]] = []  # device step, lag, input wait on the device
    at: list[int] = []
    for i in keep:
        d = device_s[i] if i < len(device_s) else None
        lag = lag_s[i] if i < len(lag_s) else None
        if d is None or lag is None or i >= len(host_s):
            continue
        fetch = idle_s[i] if i < len(idle_s) else None
        wait = wait_s[i] if i < len(wait_s) else 0.0
        seen.append((d, lag, device_input_wait(d, lag, fetch, host_s[i], wait)))
        at.append(i)
    if not device_covers(at, keep):
        return None
    step = sorted(d for d, _, _ in seen)[len(seen) // 2]
    lead = sorted(lag for _, lag, _ in seen)[len(seen) // 2]
    total = sum(d for d, _, _ in seen)
    idle = sum(w for _, _, w in seen) / total if total > 0 else 1.0
    return lead if step > 0 and lead >= HOST_AHEAD * step and idle < HOST_AHEAD_IDLE else None


class StepClock:
    """Feed it the probes' events in the order they happened; it says when a step completes."""

    def __init__(self, keep_times: bool = False) -> None:
        self.optimizers_created = 0
        self._iteration: set[int] = set()  # optimizers that stepped in the current iteration
        self._fresh: set[int] = set()  # optimizers built since the current iteration began
        self.opt_steps = 0
        self.backwards = 0
        self.fetches = 0
        self.stopped_at: float | None = None
        self._keep = keep_times
        self.opt_times = array("d")  # boundary times, per source (only with keep_times)
        self.backward_times = array("d")
        self.fetch_times = array("d")
        # Step 1 starts here: the last fetch before the first backward (or optimizer step), else the
        # first backward. Fetches before it that no backward followed are a pass over a loader
        # before training (class weights, the inputs' statistics, a peek at a batch): start-up.
        self.first_activity: float | None = None

    def reset(self) -> None:
        """Count from zero again (a new gpubottle.profile in the same process); the optimizers
        already built are still there."""
        built = self.optimizers_created
        self.__init__(self._keep)  # type: ignore[misc]
        self.optimizers_created = built

    # -- what the probes see ----------------------------------------------------------------

    def optimizer_created(self, opt: int | None = None) -> None:
        """`opt`: its key (id(), which a new optimizer may reuse from a freed one)."""
        self.optimizers_created += 1
        if opt is not None and self._iteration:
            self._fresh.add(opt)
            self._iteration.discard(opt)

    def optimizer_step(self, opt: int, t: float) -> bool:
        """True when this step() completes a step of the clock."""
        if opt in self._iteration or not self._iteration or opt in self._fresh:
            self._iteration = {opt}
            self._fresh.clear()
            self.opt_steps += 1
            if self._keep:
                self.opt_times.append(t)
            return True
        self._iteration.add(opt)
        return False

    def backward(self, t0: float, t1: float) -> bool:
        if self.first_activity is None:
            self.first_activity = t0
        self.backwards += 1
        if self._keep:
            self.backward_times.append(t1)
        return self.source == "backward"

    def fetch(self, t: float) -> bool:
        """A DataLoader.__next__ call starts (the one that ends an epoch too)."""
        if self.first_activity is None or (self.backwards == 0 and self.opt_steps == 0):
            self.first_activity = t
        self.fetches += 1
        if self._keep:
            self.fetch_times.append(t)
        return self.source == "dataloader" and self.fetches > 1

    def unhooked(self, n: int, t: float, began: float | None = None) -> None:
        """`n` optimizer steps ran with the hooks off from `began` (the block's pause: after the
        step-boundary probes of the step before), the last ending at `t` (probes/unhooked.py):
        counted, their ends spread evenly over the block (their statistics are left out). The
        first also holds the time from the step before's end to the pause: a heavier probe's, if
        one ran there (its step is marked as under it)."""
        if n <= 0 or self.source != "optimizer":
            return
        if self._keep:
            last = self.opt_times[-1] if self.opt_times else t
            start = began if began is not None and last <= began <= t else last
            self.opt_times.extend(start + (t - start) * k / n for k in range(1, n + 1))
        self.opt_steps += n

    def stop(self, t: float) -> None:
        """--steps/--duration stopped the script here: in an inference loop, at the start of a fetch
        that never ran, which ends the last step."""
        self.stopped_at = t

    # -- what it says -------------------------------------------------------------------------

    @property
    def source(self) -> str:
        if self.opt_steps or self.optimizers_created:
            return "optimizer"
        if self.backwards:
            return "backward"
        if self.fetches:
            return "dataloader"
        return "none"

    @property
    def steps(self) -> int:
        """Steps completed so far, by the live source."""
        src = self.source
        if src == "optimizer":
            return self.opt_steps
        if src == "backward":
            return self.backwards
        if src == "dataloader":
            return max(0, self.fetches - 1)
        return 0

    def final_source(self) -> str:
        """After the run: an optimizer that was built but never stepped does not hide the backward
        calls that did the training."""
        src = self.source
        if src == "optimizer" and not self.opt_steps:
            return "backward" if self.backwards else ("dataloader" if self.fetches else "none")
        return src

    def intervals(self) -> list[tuple[float, float]]:
        """Every step as (start, end), from the replayed events (needs keep_times)."""
        src = self.final_source()
        if src == "dataloader":
            bounds = list(self.fetch_times)
            if self.stopped_at is not None and (not bounds or self.stopped_at > bounds[-1]):
                bounds.append(self.stopped_at)
            return list(zip(bounds[:-1], bounds[1:]))
        bounds = list(self.opt_times if src == "optimizer" else self.backward_times)
        if not bounds:
            return []
        out: list[tuple[float, float]] = []
        # Step 1 starts at the loop's first activity; it is partial, but always inside the warm-up.
        if self.first_activity is not None and self.first_activity < bounds[0]:
            out.append((self.first_activity, bounds[0]))
        out.extend(zip(bounds[:-1], bounds[1:]))
        return out


def warmup_count(n: int, min_measured: int = MIN_MEASURED) -> int:
    """Leading steps to leave out: compilation, allocator growth, worker start-up."""
    want = min(MAX_WARMUP, max(2, math.ceil(0.1 * n)))
    return max(0, min(want, n - min_measured)) if n > min_measured else min(1, n)


def measured_indices(n: int, warmup: int, instrumented: list[int], pauses: list[int],
                     unhooked: list[int] | None = None) -> list[int]:
    """The steps every statistic uses: after warm-up, not under gpubottle's heavier probes, not run
    with its hooks off, not pauses."""
    skip = set(instrumented) | set(pauses) | set(unhooked or ())
    return [i for i in range(warmup, n) if i not in skip]
