"""Per-step time breakdown with the meaning of the retired TensorBoard profiler plugin.

Steps are the ProfilerStep#N spans, each extended to the end of the device work that its runtime calls
launched (and trailing steps whose kernels were not all captured are dropped). Within the steps, time
goes to the first role that covers it, in priority order: Kernel, Memcpy, Memset, Communication,
Runtime, DataLoader, CPU Exec; what no role covers is Other.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from gpubottle.trace.collect import ROLES, TraceData
from gpubottle.trace.ranges import (
    Clipper,
    Ranges,
    intersect,
    intersect_stream,
    merge,
    merge_in_place,
    merged_pairs,
    subtract,
)

BREAKDOWN = (*ROLES, "other")
# The whole trace's ranges kept for the GPU analyses: device work, and host ops only where there are
# no kernels (a CPU-only trace's compute).
KEPT_ROLES = ("kernel", "memcpy", "memcpy_device", "memset", "communication", "cpu_op")


@dataclass
class Breakdown:
    steps: Ranges = field(default_factory=list)  # (start, end) in trace microseconds
    step_names: list[str] = field(default_factory=list)
    per_step: list[dict[str, float]] = field(default_factory=list)  # role -> microseconds
    role_ranges: dict[str, Ranges] = field(default_factory=dict)  # KEPT_ROLES merged, whole trace
    uses_gpu: bool = False
    dropped_tail_steps: int = 0
    by_optimizer: bool = False  # no ProfilerStep#: the steps end at torch.optim's Optimizer.step#

    @property
    def avg_step_us(self) -> float:
        return sum(e - s for s, e in self.steps) / len(self.steps) if self.steps else 0.0

    def avg(self) -> dict[str, float]:
        n = len(self.per_step)
        return {r: sum(p[r] for p in self.per_step) / n for r in BREAKDOWN} if n else {}

    def shares(self) -> dict[str, float]:
        step = self.avg_step_us
        return {r: v / step for r, v in self.avg().items()} if step > 0 else {}


class _DeviceWork:
    """Each correlation id's device work: its first start, last end and count, in three arrays
    indexed through one dict (a tuple per id took twice the memory on a large trace)."""

    def __init__(self, d: TraceData) -> None:
        self.index: dict[int, int] = {}
        self.lo, self.hi, self.count = array("d"), array("d"), array("q")
        index, lo, hi, count = self.index, self.lo, self.hi, self.count
        for c, s, e in zip(d.dev_corr, d.dev_start, d.dev_end):
            k = index.get(c)
            if k is None:
                index[c] = len(lo)
                lo.append(s)
                hi.append(e)
                count.append(1)
            else:
                if s < lo[k]:
                    lo[k] = s
                if e > hi[k]:
                    hi[k] = e
                count[k] += 1


def _adjust_steps(d: TraceData, steps: Ranges) -> tuple[Ranges, list[int], bool]:
    """Extend host step spans to the device work they launched; returns the matched device count."""
    work = _DeviceWork(d)
    dev, dev_lo, dev_hi, dev_n = work.index, work.lo, work.hi, work.count
    # Only the calls that launched device work can extend a step (a fraction of a real trace's),
    # walked in start order by index rather than as a list of tuples.
    rt_start, rt_end, rt_corr = d.rt_start, d.rt_end, d.rt_corr
    order = sorted((k for k, c in enumerate(rt_corr) if c in dev), key=rt_start.__getitem__)
    inf = float("inf")
    dev_span = [(inf, -inf)] * len(steps)
    matched = [0] * len(steps)
    matched_corr: set[int] = set()
    i = r = 0
    lo, hi = inf, -inf
    while i < len(steps) and r < len(order):
        hs, he = steps[i]
        k = order[r]
        rs, re_, corr = rt_start[k], rt_end[k], rt_corr[k]
        if rs < hs:
            r += 1
        elif re_ <= he:
            at = dev.get(corr)
            if at is not None:
                lo, hi = min(lo, dev_lo[at]), max(hi, dev_hi[at])
                matched[i] += dev_n[at]
                matched_corr.add(corr)
            r += 1
        elif rs < he:
            r += 1
        else:
            dev_span[i] = (lo, hi)
            i += 1
            lo, hi = inf, -inf
    if i < len(steps):
        dev_span[i] = (lo, hi)
    uses_gpu = bool(matched_corr)
    if not uses_gpu:
        return steps, matched, False
    prev_end = steps[0][0]
    if dev_span[0][0] != inf:
        for c, at in dev.items():
            if c not in matched_corr and dev_hi[at] < dev_span[0][0]:
                prev_end = max(prev_end, dev_hi[at])
    out: Ranges = []
    for (hs, he), (ds, de) in zip(steps, dev_span):
        start = max(prev_end, hs)
        end = max(he, start) if ds == inf else max(he, de)
        end = max(end, start)
        out.append((start, end))
        prev_end = end
    return out, matched, True


def breakdown(d: TraceData) -> Breakdown:
    host = sorted(d.steps)
    names = [n for _s, _e, n in host]
    steps: Ranges = [(s, e) for s, e, _n in host]
    bd = Breakdown()
    if not steps and len(d.opt_steps) >= 2:
        # A profile without a schedule has no ProfilerStep#: each step ends with the optimizer's
        # step (as `gpubottle run`'s own clock), the first from the trace's first host op.
        ends = sorted(e for _s, e in d.opt_steps)
        steps = list(zip([d.host_min, *ends[:-1]], ends))
        names, bd.by_optimizer = [str(i) for i in range(len(steps))], True
    if not steps and d.host_min < d.host_max:
        steps, names = [(d.host_min, d.host_max)], ["0"]
    if not steps:
        return bd
    steps, matched, uses_gpu = _adjust_steps(d, steps)
    if uses_gpu and len(steps) > 1:
        last = max((k for k, m in enumerate(matched) if m > 0), default=-1)
        if last >= 0:
            keep = last + 1
            if last > 0 and matched[last - 1] * 0.8 > matched[last]:
                keep = last  # the profiler likely missed part of the last step's kernels
            bd.dropped_tail_steps = len(steps) - keep
            steps, names = steps[:keep], names[:keep]
    # One role at a time, its ranges dropped once costed unless the GPU analyses read them: a
    # real trace's runtime calls alone are a third of its events.
    slots = merge(list(steps))
    roles: dict[str, Ranges] = {}
    per_role: dict[str, list[float]] = {}
    for k, r in enumerate(ROLES):
        spans = d.roles[r]
        if k and r not in KEPT_ROLES:  # costed as they come, never held (the runtime calls)
            cost = intersect_stream(slots, merged_pairs(spans.starts, spans.ends))
            per_role[r] = _per_step(cost, steps)
            slots = subtract(slots, cost)
            continue
        ranges = merge_in_place(spans.pairs())
        cost = ranges if k == 0 else intersect(slots, ranges)
        per_role[r] = _per_step(cost, steps)
        slots = subtract(slots, cost)
        if r in KEPT_ROLES and (r != "cpu_op" or not roles["kernel"]):
            roles[r] = ranges
        del ranges, cost
    per_role["other"] = _per_step(slots, steps)
    bd.per_step = [{r: per_role[r][i] for r in BREAKDOWN} for i in range(len(steps))]
    bd.steps, bd.step_names, bd.role_ranges, bd.uses_gpu = steps, names, roles, uses_gpu
    return bd


def _per_step(cost: Ranges, steps: Ranges) -> list[float]:
    clip = Clipper(cost)
    return [clip.total_in(s, e) for s, e in steps]
