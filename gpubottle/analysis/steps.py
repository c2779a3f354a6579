"""Step boundaries and the input wait inside each step, from the probes' events.

The clock is the most specific one the script gave us: optimizer steps (the optimizer that stepped most,
so GANs and gradient accumulation count one step per iteration), else backward calls, else the
DataLoader's batches (inference loops).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import StepEvidence

MAX_WARMUP = 10
OUTLIER_FACTOR = 10.0  # a step this many times the median is a pause (validation, checkpoint)


def warmup_count(n: int, min_measured: int = 5) -> int:
    """Leading steps to leave out: compilation, allocator growth, worker start-up."""
    want = min(MAX_WARMUP, max(2, math.ceil(0.1 * n)))
    return max(0, min(want, n - min_measured)) if n > min_measured else min(1, n)


def _boundaries(ev: ChildEvents) -> tuple[str, list[float]]:
    if ev.opt_steps:
        counts = Counter(oid for oid, _ in ev.opt_steps)
        top = max(counts.values())
        pick = next(oid for oid, _ in ev.opt_steps if counts[oid] == top)
        return "optimizer", [float(t) for oid, t in ev.opt_steps if oid == pick]
    if ev.backwards:
        return "backward", [float(t1) for _, t1 in ev.backwards]
    fetches = [float(b[1]) for b in ev.batches]
    if fetches:
        return "dataloader", fetches
    return "none", []


def step_evidence(ev: ChildEvents) -> StepEvidence:
    source, bounds = _boundaries(ev)
    batches = sorted(ev.batches, key=lambda b: float(b[1]))
    out = StepEvidence(
        source=source,
        optimizers=len({oid for oid, _ in ev.opt_steps}),
        backward_calls=len(ev.backwards),
        batches=sum(1 for b in batches if not b[4]),
    )
    intervals: list[tuple[float, float]] = []
    if source == "dataloader":
        intervals = list(zip(bounds[:-1], bounds[1:]))
    elif bounds:
        # The first step starts at the loop's first activity seen (its first fetch or backward), so
        # N boundaries make N steps; that step is partial, but always inside the warm-up.
        firsts = [float(b[1]) for b in batches[:1]] + [float(w[0]) for w in ev.backwards[:1]]
        start = min(firsts) if firsts else None
        if start is not None and start < bounds[0]:
            intervals.append((start, bounds[0]))
        intervals.extend(zip(bounds[:-1], bounds[1:]))
    durations: list[float] = []
    waits: list[float] = []
    cpus: list[float | None] = []
    j = 0
    for lo, hi in intervals:
        wait = 0.0
        cpu: float | None = None
        while j < len(batches) and float(batches[j][2]) <= lo:
            j += 1
        k = j
        while k < len(batches) and float(batches[k][1]) < hi:
            t0, t1 = float(batches[k][1]), float(batches[k][2])
            overlap = max(0.0, min(t1, hi) - max(t0, lo))
            wait += overlap
            if batches[k][3] is not None and t1 > t0:
                cpu = (cpu or 0.0) + float(batches[k][3]) * overlap / (t1 - t0)
            k += 1
        durations.append(hi - lo)
        waits.append(wait)
        cpus.append(cpu)
    out.instrumented = [
        i for i, (lo, hi) in enumerate(intervals)
        if any(lo < float(p[1]) and hi > float(p[0]) for p in ev.perturbed)
    ]
    out.durations_s = durations
    out.input_wait_s = waits
    out.input_wait_cpu_s = cpus
    out.warmup = warmup_count(len(durations))
    skip = set(out.instrumented)
    measured = [d for i, d in enumerate(durations) if i >= out.warmup and i not in skip]
    if measured:
        med = statistics.median(measured)
        out.outliers = [
            i for i, d in enumerate(durations)
            if i >= out.warmup and i not in skip and d > OUTLIER_FACTOR * med and d > 0.05
        ]
        out.window_start = intervals[out.warmup][0]
        out.window_end = intervals[-1][1]
    return out
