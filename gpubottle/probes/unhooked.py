"""What gpubottle's hooks cost a loop of short steps in place, measured in the run itself.

A hook's own clock sees its body only; between a loop's own work it also costs the code around it
(its caches, the wrappers' frames): on benchmarks/tiny_steps.py's 0.33-ms steps the hooks timed
13 us a step themselves and cost 25-27 in place (benchmarks/hooks_in_place.py all). So where the
hooks' own time is a share of the step that matters (MEASURE_SHARE), the hot hooks (each fetch,
backward and optimizer step, and the step-boundary probes) are turned off for short blocks of
steps, one block in EVERY_BLOCKS: the optimizer's post-step hook only counts them then, and the
others are taken out (their wrappers' originals put back, the pre-step hook unregistered): a
wrapper that only tests a flag still costs a frame a call, which a block that kept it would not
measure (hooks off but in place: +3.6% a 0.3-ms step against plain python, 4 rounds). Each block
ends with an `Unhooked` record; the analysis spreads its steps evenly over it (clock.py), leaves
them out of the statistics, and compares each block's mean step with the hooked steps around it
(analysis/hooks_cost.py): the median difference is the hooks' cost a step in place, which the
account counts where it stands above their own clocks by twice its spread. The probe makes the
same comparison as it goes (each block against the hooked steps between blocks) and runs its
blocks one in LATER_EVERY early where more of them could not tell the cost from those clocks.

From SPARSE_AFTER_S into the run (sooner, SPARSE_FROM_S after the blocks were decided on, once
their measurement is done), where the hooks' own time is SPARSE_SHARE of a step or more, the blocks
become the rule: the hot hooks run on one step in SPARSE_EVERY, or in as many more (up to
SPARSE_MAX_EVERY) as hold what they cost in place to SPARSE_COST of the run (issue 32's budget is
for a long run's cost), in cycles as long as one in 10's. Their own clocks had said 0.5% of
benchmarks/many_threads.py's 5-ms steps where they cost it ~3% beside 16 Python threads (paired
with plain python, 4 pairs of 30-s rounds after 15 s: +2.9%, and -0.8% / -2.3% with the late
blocks): the step times, waits and parts the report needs are long measured by then, and the
counted steps keep the run's account whole. Such a block is too long for hooked steps around it to
measure it against.

Only on a single process training with one torch.optim optimizer and no CUDA (a GPU run's device
clock marks every step; a rank's pause would hold the others at the next collective), and not in a
--try-fixes trial. Rarer records (an epoch's start, a checkpoint) are still written in a block;
an epoch or an evaluation pass starting ends it early (`abort`: such a block counts its steps,
not its time).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from gpubottle.clock import PAUSE_FACTOR, PAUSE_MIN_S, StepClock
from gpubottle.probes.hooks import NEVER, StepHooks, Wake, wake_in
from gpubottle.probes.recorder import Recorder, Stopper
from gpubottle.stats import median_spread
from gpubottle.wire import Unhooked

# The hooks' own time a step (as they timed it) from this share of the step: their cost in place
# (about twice that) is a point or more of the run, more than the account may be off by.
MEASURE_SHARE = 0.01
START_STEPS = 300  # steps before deciding (after the warm-up and the step probes' first looks)
START_S = 1.0  # ...and this long of them: enough to know the step and the hooks' time a step
BLOCK_S = 0.06  # a block's length: a 0.33-ms step's blocks of 180 steps (noise of a few us a step)
BLOCK_MIN, BLOCK_MAX = 20, 1000
# One block off in this many while measuring: a quarter of the steps unrecorded, FIRST_BLOCKS in
# 5.8 s of 0.36-ms steps (one in 10 took 14.4 s, the hooks costing such a loop ~12% meanwhile: the
# sparse blocks wait for the measurement)
EVERY_BLOCKS = 4
FIRST_BLOCKS = 24  # ...for this many blocks; then one in LATER_EVERY (the cost seen to change)
LATER_EVERY = 100
# The measurement stands for the hooks' cost where it is above their own clocks by this many times
# its spread (about a 95% interval's half); else their own clocks hold (the quiet 0.5-ms case:
# 29.8 +- 2.2 us a step against 13 by their clocks; beside two busy programs -86 +- 133).
RESOLVE_SPREADS = 2.0
# From this many blocks compared, where FIRST_BLOCKS of them would not resolve the cost (its spread
# shrinking as the square root of their number), the blocks go to one in LATER_EVERY at once: steps
# that vary by the script's other threads (benchmarks/many_threads.py: 27.5 +- 26.3 us against 24.3
# by the hooks' clocks) leave a quarter of their steps unrecorded for nothing.
SETTLE_BLOCKS = 12
COST_FROM_BLOCKS = 5  # blocks compared before their median stands for the cost (sparse_every)
SPARSE_AFTER_S = 15.0  # seconds from the probes' install (or a profile()'s start) to the sparse hooks
# ...or sooner: this long after the blocks were decided on (1 s and 300 steps into the loop), once
# the measurement is done (or none was needed). Hooked throughout the first 15 s, 0.36-ms steps
# cost ~12% and 5-ms steps beside 16 threads ~3%: most of a 45-s run's 2%. From 5 s there, the
# threads' case was still hooked 7.5 s of its 45 (~0.2 s of its cost, 0.45 points), with ~1,500
# steps hooked whole by then; from 2 s, ~900.
SPARSE_FROM_S = 2.0
SPARSE_EVERY = 10  # ...then hooked one step in this many, or in more where they cost more:
SPARSE_SHARE = 0.001  # from this share of a step in the hooks' own time (a 25-ms step's 25 us)
# The hooks' cost a long run carries from then on, at most (where one in SPARSE_MAX_EVERY keeps it
# there): their cost in place as measured (else IN_PLACE_GUESS times their own clocks: 13 us a
# 0.33-ms step by them, 25-27 in place, benchmarks/hooks_in_place.py; beside 16 Python threads
# 70-100 us a hooked 7-ms step of benchmarks/many_threads.py against ~24 by them, benchmarks/
# in_place.py over four series, 2026-12-04) over the hooked share. With one in 10, 0.5-ms steps
# whose hooks cost 8% in place carried 0.8% (make bench's tiny case), and the threads case's
# hooked steps 0.08-0.35 points after 15 s, where the guess said 0.07.
SPARSE_COST = 0.001
SPARSE_MAX_EVERY = 50
IN_PLACE_GUESS = 3.5
# A sparse cycle (the hooked steps and the block after them) lasts this long whatever the share: a
# census the supervisor asks for, a --duration or an epoch's end wait at most one block.
SPARSE_CYCLE_S = BLOCK_S * SPARSE_EVERY

_monotonic = time.monotonic


def sparse_every(step_s: float, own_s: float, cost_s: float | None) -> int:
    """One step in how many the sparse blocks leave hooked: their cost a step in place (`cost_s`,
    measured in the run; else IN_PLACE_GUESS times `own_s`, their own clocks' time a step) over
    SPARSE_COST of a `step_s` step, from SPARSE_EVERY to SPARSE_MAX_EVERY, and no more than a cycle
    of SPARSE_CYCLE_S holds with two hooked steps (longer steps: a block stays under a second)."""
    cost = cost_s if cost_s is not None else IN_PLACE_GUESS * own_s
    if step_s <= 0 or not math.isfinite(step_s) or cost <= 0:
        return SPARSE_EVERY
    fits = int(SPARSE_CYCLE_S / (2 * step_s) + 1e-9)
    return max(SPARSE_EVERY, min(SPARSE_MAX_EVERY, fits, math.ceil(cost / step_s / SPARSE_COST)))


class HooksOff:
    """A step probe (probes/hooks.py) that turns the hot hooks off in blocks: `off` while one runs,
    `tick()` from the optimizer's post-step hook at each of its steps, `abort()` when a phase
    begins."""

    def __init__(self, recorder: Recorder, stopper: Stopper, hooks: StepHooks, enabled: bool = True) -> None:
        self.recorder = recorder
        self.stopper = stopper
        self.clock: StepClock = stopper.clock
        self.hooks = hooks
        self.enabled = enabled
        self.off = False
        self._swaps: list[tuple[Any, str, Any, Any]] = []  # owner, name, original, wrapper
        self._dropped: list[tuple[dict[Any, Any], Any]] = []  # a hooks dict, gpubottle's key in it
        self._held: list[tuple[dict[Any, Any], Any, Any]] = []
        self._reset()

    def unwrap_with(self, owner: Any, name: str, original: Any) -> None:
        """`owner.name` is a hot hook's wrapper (just installed): `original` while a block runs."""
        self._swaps.append((owner, name, original, getattr(owner, name)))

    def drop_during(self, hooks: dict[Any, Any], key: Any) -> None:
        """`hooks[key]` (a hook torch calls at every step) is left out while a block runs."""
        self._dropped.append((hooks, key))

    def _take_out(self) -> None:
        try:
            for owner, name, original, wrapper in self._swaps:
                if getattr(owner, name, None) is wrapper:  # (not if the script patched it since)
                    setattr(owner, name, original)
            self._held = [(d, k, d.pop(k)) for d, k in self._dropped if k in d]
        except Exception:
            pass  # the wrappers stay, and only test the flag

    def _put_back(self) -> None:
        try:
            for owner, name, original, wrapper in self._swaps:
                if getattr(owner, name, None) is original:
                    setattr(owner, name, wrapper)
            for d, k, fn in self._held:
                d.setdefault(k, fn)
        except Exception:
            pass
        self._held = []

    def _reset(self) -> None:
        self.off = False
        self.block = 0  # steps a block (0: not measuring)
        self.blocks = 0  # blocks run so far
        self._base: tuple[int, float, float] | None = None  # step, time, hooks' own time
        self._left = 0  # steps still to run off in this block
        self._n = 0
        self._t0 = 0.0
        self._last = 0.0
        self._end: tuple[int, float] | None = None  # the hub's step and time where hooked steps resumed
        self._seen: list[list[float | None]] = []  # each block: the hooked mean step before it, its own
        self._unhooked = 0  # steps run in blocks
        self.settled = False  # (blocks one in LATER_EVERY from now)
        # This use's start: the probes' install under `gpubottle run`, each gpubottle.profile() or
        # notebook cell's own start (a kernel's probes installed an hour before count from there).
        self.started = _monotonic()
        self.may_thin = False  # the hooks cost enough a step to run sparse after SPARSE_AFTER_S
        self._decided = math.inf  # when the blocks were decided on
        self.sparse = False  # the block running now is a sparse one
        self.sparse_set = False  # (every and unit set for the sparse cycles: _set_sparse)
        self.unit = 0  # the hooked steps of a sparse cycle (_set_sparse: BLOCK_S of them at one in 10)
        self.every = SPARSE_EVERY  # a sparse cycle's steps, in units (sparse_every)
        self._step_s = math.inf  # the typical step when the blocks were decided on
        self._own_s = 0.0  # the hooks' own time a step, by their clocks
        self._cost_s: float | None = None  # ...and their cost a step in place, once measured

    def reset(self, cfg: Any) -> None:
        if self.off:
            self.resume(aborted=True)
        self._reset()
        self.enabled = not getattr(cfg, "trial", None)

    def _own(self) -> float:
        return self.recorder.hooks_s + self.hooks.spent_s

    def _eligible(self) -> bool:
        """One optimizer paces the steps; no CUDA, no ranks, no --try-fixes trial."""
        if not self.enabled or self.clock.source != "optimizer" or self.clock.optimizers_created != 1:
            return False
        if self.recorder.has_sticky("rank") or self.stopper.agreed is not None:
            return False
        torch = sys.modules.get("torch")
        try:
            return torch is not None and not torch.cuda.is_initialized()
        except Exception:
            return False

    def on_step(self, step: int) -> Wake | None:
        now = _monotonic()
        if self.block:
            return self._pause(step, now)
        if self._base is None:
            self._base = (step, now, self._own())
            return (step + START_STEPS, float("inf"))
        b_step, b_t, b_own = self._base
        if now - b_t < START_S:
            return wake_in(START_S - (now - b_t))
        n = step - b_step
        if n <= 0 or not self._eligible():
            return NEVER
        step_s = self._step_s = (now - b_t) / n
        own = self._own_s = (self._own() - b_own) / n
        if own < SPARSE_SHARE * step_s:
            return NEVER  # steps long enough that the hooks cost them nothing worth a block
        self.may_thin = True
        self._decided = now
        self.block = max(BLOCK_MIN, min(BLOCK_MAX, round(BLOCK_S / step_s)))
        self._end = (b_step, b_t)
        if own < MEASURE_SHARE * step_s:  # within a point: not measured, only thinned later
            self.settled = True
            return wake_in(max(0.0, self._sparse_at() - now))
        return self._pause(step, now)

    def _sparse_at(self) -> float:
        """When the sparse blocks may begin: SPARSE_AFTER_S from the start, or SPARSE_FROM_S from the
        blocks' decision once their measurement is done."""
        latest = self.started + SPARSE_AFTER_S
        if self.settled or self.blocks >= FIRST_BLOCKS:
            return min(latest, self._decided + SPARSE_FROM_S)
        return latest

    def _thinning(self, now: float) -> bool:
        return self.may_thin and now >= self._sparse_at()

    def _pause(self, step: int, now: float) -> Wake:
        sparse = self._thinning(now)
        left = self.block if self._eligible() else 0  # (an optimizer built since: steps unclear)
        if sparse:
            if not self.sparse_set:
                self._set_sparse()
            left = self.unit * (self.every - 1) if left else 0
        if self.stopper.max_steps is not None:  # --steps stops where it would have
            left = min(left, self.stopper.max_steps - self.clock.steps)
        if left > 0:
            if not sparse:
                self._compare(step, now)
            self.sparse = sparse
            self._left, self._n, self._t0, self._last = left, 0, now, now
            self.off = True
            self.recorder.hot_on = False
            self._take_out()
            self.blocks += 1
        if sparse:
            return (step + self.unit * self.every, float("inf"))
        every = EVERY_BLOCKS if self.blocks < FIRST_BLOCKS and not self.settled else LATER_EVERY
        # (measuring: the sparse blocks begin at _sparse_at, whichever comes first)
        return (step + self.block * every, self._sparse_at() if self.may_thin else float("inf"))

    def _set_sparse(self) -> None:
        """The sparse cycles' share and length, once, as they begin: one step in `every` hooked
        (sparse_every, from what the hooks cost a step), the cycle SPARSE_CYCLE_S long."""
        self.sparse_set = True
        self.every = sparse_every(self._step_s, self._own_s, self._cost_s)
        # (no BLOCK_MIN: a 25-ms step's block of 20 would leave the step-boundary probes and a
        # census the supervisor asks for waiting 4.5 s; no measurement needs the length)
        if math.isfinite(self._step_s) and self._step_s > 0:
            self.unit = max(2, min(BLOCK_MAX, round(SPARSE_CYCLE_S / self.every / self._step_s)))

    def _compare(self, step: int, now: float) -> None:
        """A block begins: the hooked steps' mean since the last block closes that block's
        comparison (a span between blocks may hold an evaluation or the heavier probes' steps:
        outliers the median passes over); settled where FIRST_BLOCKS would not resolve the cost."""
        if self.settled or self._base is None or self.blocks >= FIRST_BLOCKS:
            return  # (one in LATER_EVERY already: nothing left to decide)
        before = None
        if self._end is not None and step > self._end[0]:
            before = (now - self._end[1]) / (step - self._end[0])
        self._seen.append([before, None])
        diffs = [(b0 + b1) / 2 - m for (b0, m), (b1, _) in zip(self._seen, self._seen[1:])
                 if b0 is not None and m is not None and b1 is not None]
        if len(diffs) < COST_FROM_BLOCKS:
            return
        cost, se = median_spread(diffs)
        hooked = step - self._base[0] - self._unhooked
        own = (self._own() - self._base[2]) / hooked if hooked > 0 else 0.0
        self._cost_s, self._own_s = max(cost, own), own  # (noise can put a cost under their clocks)
        if len(diffs) < SETTLE_BLOCKS:
            return
        if cost - RESOLVE_SPREADS * se * math.sqrt(len(diffs) / FIRST_BLOCKS) <= own:
            self.settled = True

    def tick(self) -> bool:
        """One optimizer step with the hooks off (only its post-step hook runs, to count it). True
        where the step was a long gap (PAUSE_FACTOR typical steps, at least PAUSE_MIN_S: a sort at
        an epoch's start, work every N steps): the block ends at the step before it and this one is
        recorded as the hooks record (a sparse block spread evenly over its steps hid such a gap,
        and the gap's stacks were read as the steps')."""
        now = _monotonic()
        if now - self._last > max(PAUSE_MIN_S, PAUSE_FACTOR * self._step_s):
            self.resume(aborted=True)
            return True
        self._n += 1
        self._last = now
        if self._n >= self._left:
            self.resume()
        return False

    def abort(self) -> None:
        """A phase begins (an epoch's iter(), an evaluation pass): its records are wanted. A sparse
        block so ended is followed by the next after one hooked stretch, not at its own schedule
        (epochs of 390 steps ended every block of a 460-step cycle: half the late steps hooked)."""
        if self.off:
            sparse = self.sparse
            self.resume(aborted=True)
            if sparse:
                self.hooks.sooner(self, self.hooks.steps + self.unit)

    def resume(self, aborted: bool = False) -> None:
        self.off = False
        self._put_back()
        self.recorder.hot_on = self.recorder.active
        n = self._n
        if n <= 0:
            return
        self.clock.unhooked(n, self._last, self._t0)
        self.hooks.steps += n
        self._unhooked += n
        self._end = (self.hooks.steps, self._last)
        if self._seen and len(self._seen) == self.blocks and not aborted:  # (one ended early has
            self._seen[-1][1] = (self._last - self._t0) / n  # no time like its neighbours')
        self.recorder.emit(Unhooked(self._t0, self._last, n, aborted, self.sparse,
                                    self.every if self.sparse else None))
        if self.stopper.armed and not aborted:
            self.stopper.check(True)  # --steps reached at the block's last step: EarlyStop

    def finish(self, exc: BaseException | None) -> None:
        if self.off:
            self.resume(aborted=True)
