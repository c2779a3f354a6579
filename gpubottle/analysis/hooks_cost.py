"""What gpubottle's hooks cost the loop in place, from the blocks of steps the run made without them
(probes/unhooked.py): each block's mean step against the hooked steps around it, as many before and
after it as it had; the median difference over the blocks is the cost a step (a block beside an
epoch's start or a pause is an outlier the median leaves out), its spread the standard error of a
median. Its steps are the clock's, spread evenly over the block (clock.py): their one time is the
block's mean, so they are left out of every statistic."""

from __future__ import annotations

import bisect
import statistics
from typing import NamedTuple

from gpubottle.evidence import InPlaceCost
from gpubottle.probes.unhooked import RESOLVE_SPREADS
from gpubottle.stats import median_spread
from gpubottle.wire import ProbeCost, Unhooked

MIN_BLOCKS = 5  # fewer blocks with neighbours on both sides than this: not measured


def own_time_s(cost: ProbeCost | None) -> float:
    """The hot hooks' and the step-boundary probes' time, as they timed themselves."""
    return float(cost.hooks_s) + float(cost.step_probes_s) if cost is not None else 0.0


class Block(NamedTuple):
    """A block's steps among the clock's intervals, [i0, i1), and its own time: from its pause (after
    the step-boundary probes of the step before it) to its last step's end."""

    i0: int
    i1: int
    aborted: bool
    seconds: float
    sparse: bool = False  # a late block of the sparse hooks (probes/unhooked.py), no measurement


def unhooked_blocks(intervals: list[tuple[float, float]], records: list[Unhooked]) -> list[Block]:
    """Each block's steps: the clock spread them up to its last step's end (the first one from the
    step before, whose probes may have run long: counted from the end)."""
    ends = [hi for _, hi in intervals]
    out = []
    for r in records:
        i1 = bisect.bisect_right(ends, float(r.t1))
        i0 = max(0, i1 - int(r.steps))
        if i1 > i0:
            out.append(Block(i0, i1, bool(r.aborted), max(0.0, float(r.t1) - float(r.t0)), bool(r.sparse)))
    return out


def _neighbours(start: int, step: int, want: int, n: int, off: set[int], skip: set[int]) -> list[int]:
    """Up to `want` hooked steps from `start` on, walking by `step` (those in `skip` passed over),
    until another block or the run's end."""
    out: list[int] = []
    i = start
    while 0 <= i < n and len(out) < want and i not in off:
        if i not in skip:
            out.append(i)
        i += step
    return out


def in_place_cost(durations: list[float], net: list[float], blocks: list[Block], instrumented: list[int],
                  warmup: int, own_s: float = 0.0) -> InPlaceCost | None:
    """`net`: every step's time (`durations`) less evaluation and checkpoints; `instrumented`: the
    steps under the heavier probes (accounted apart, so no neighbour); `own_s`: the hooks' own time
    a hooked step, as they timed it."""
    if not blocks:
        return None
    off = {i for b in blocks for i in range(b.i0, b.i1)}
    skip = set(instrumented) | set(range(warmup))
    diffs: list[float] = []
    sizes: list[int] = []
    means: list[float] = []
    for i0, i1, aborted, seconds, sparse in blocks:
        k = i1 - i0
        if aborted or sparse or i1 > len(net):
            continue  # an epoch or an evaluation began right after it: no neighbours like it
        before = _neighbours(i0 - 1, -1, k, len(net), off, skip)
        after = _neighbours(i1, 1, k, len(net), off, skip)
        if len(before) < k // 2 or len(after) < k // 2:
            continue
        around = before + after
        outside = sum(durations[i0:i1]) - sum(net[i0:i1])  # its evaluation and checkpoints
        means.append((seconds - outside) / k)
        diffs.append(statistics.fmean(net[i] for i in around) - means[-1])
        sizes.append(k)
    if len(diffs) < MIN_BLOCKS:
        return None
    cost, se = median_spread(diffs)
    step = statistics.median(means)
    return InPlaceCost(per_step_s=round(cost, 9), spread_s=round(se, 9), blocks=len(diffs),
                       block_steps=int(statistics.median(sizes)), hooked_steps=len(net) - len(off),
                       step_s=round(step, 9), own_s=round(own_s, 9),
                       resolved=cost - RESOLVE_SPREADS * se > own_s)
