"""Which parts of the training the first steps' warm-up came out of.

The account moves the first steps' time beyond a typical step (analysis/account.warmup_excess) to
start-up. Taken from every part of the training alike, the parts the probes timed lost what they
never spent: a loop whose first step imported torch._dynamo (0.8 s, before the optimizer's hooks)
read "optimizer 0.01 s" for 128 steps the hooks had timed at 0.061 s. So each timed part gives up
its own excess in those steps (its time there beyond its median in the measured steps), and the
rest of the warm-up comes from the code no probe timed (forward, compiling, the loop's own code).
"""

from __future__ import annotations

import statistics

from gpubottle.analysis.cpu import in_spans
from gpubottle.analysis.phases import Carved, Span, backward_spans, merge, optimizer_spans, overlap_total
from gpubottle.analysis.stacks import ThreadSamples
from gpubottle.analysis.work_kinds import COMPILING, work_kind
from gpubottle.collect.events import ChildEvents

TYPICAL_STEPS = 200  # measured steps a typical step's part is read from (evenly spaced)
TIMED = ("input", "backward", "optimizer")  # the training's parts the probes time call by call
# The main thread's samples in the first steps a compiling share is read from: fewer say nothing.
COMPILING_MIN_SAMPLES = 5


def timed_calls(ev: ChildEvents, carved: Carved) -> dict[str, list[Span]]:
    """Each timed part's calls as the probes timed them: the training's fetches, backward() and
    optimizer step() calls."""
    return dict(zip(TIMED, (
        [(float(b.t0), float(b.t1)) for b in carved.training_batches(ev.batches)],
        backward_spans(ev), optimizer_spans(ev))))


def timed_excess(calls: dict[str, list[Span]], intervals: list[Span], first: list[int],
                 keep: list[int]) -> dict[str, float]:
    """Per timed part (`calls`: timed_calls): its time in the `first` steps beyond its median over
    the `keep` steps (the measured ones). `intervals`: every step's (start, end)."""
    sample = keep[::max(1, len(keep) // TYPICAL_STEPS)]
    out: dict[str, float] = {}
    for part, pairs in calls.items():
        spans = merge(pairs)
        if not spans or not sample:
            continue
        typical = statistics.median(overlap_total([intervals[i]], spans) for i in sample)
        excess = sum(max(0.0, overlap_total([intervals[i]], spans) - typical) for i in first)
        if excess > 0:
            out[part] = excess
    return out


def without_warmup(parts: dict[str, float], warm: float, timed: dict[str, float]) -> dict[str, float]:
    """`parts` less `warm` seconds: each timed part less its own excess (at most what it has), the
    rest from the untimed parts in proportion, and what they cannot give from every part alike."""
    own = {k: min(v, parts.get(k, 0.0)) for k, v in timed.items()}
    total = sum(own.values())
    if total > warm:  # (the steps' excess is the whole warm-up: never more than it)
        own = {k: v * warm / total for k, v in own.items()}
        total = warm
    out = {k: x - own.get(k, 0.0) for k, x in parts.items()}
    rest = warm - total
    untimed = [k for k in out if k not in TIMED]
    pool = sum(out[k] for k in untimed)
    if rest > 0 and pool > 0:
        take = min(rest, pool)
        for k in untimed:
            out[k] -= take * out[k] / pool
        rest -= take
    left = sum(out.values())
    if rest > 0 and left > 0:
        out = {k: x * max(0.0, left - rest) / left for k, x in out.items()}
    return {k: round(max(0.0, x), 4) for k, x in out.items()}


def compiling_share(main: ThreadSamples | None, spans: list[Span]) -> float:
    """The share of the main thread's samples inside `spans` (the first steps) that were compiling
    (torch.compile's first calls, the backward's compile at the first backward, a recompile for a
    new shape): a warm-up of 20 s in a compiled encoder's first steps was that, where the account
    said only "the first steps' warm-up". 0 where the samples carry no times or are too few."""
    if main is None or len(main.times) != len(main.stacks):
        return 0.0
    spans = merge(spans)
    inside = [st for st, t in zip(main.stacks, main.times) if t >= 0 and in_spans(t, spans)]
    if len(inside) < COMPILING_MIN_SAMPLES:
        return 0.0
    return sum(1 for st in inside if work_kind(st) == COMPILING) / len(inside)
