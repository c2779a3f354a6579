"""Step-time statistics with bootstrap intervals: the one home of the ratio of mean steps that the
gate (current vs baseline) and --try-fixes (baseline vs a setting) both decide on.

Ratios compare mean steps (the run's throughput), not medians: with workers, batches arrive in
bursts, so most steps find one ready and a few wait long, and the median says little about how fast
the run goes (measured: a loader starved 94% of its step had a median of 1.4 ms in one round).

Steps come in rounds (runs of the script): rounds are pooled, and resampled as blocks of steps
rather than single steps, since neighbouring steps share the machine's state (and a whole round can
run on a slower machine). One round is plain step resampling. Seeded: the same data always gives
the same interval.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable

RESAMPLES = 2000


def _resample(rounds: list[list[float]], rng: random.Random) -> list[float]:
    """One bootstrap sample: rounds drawn with replacement, then steps within each."""
    out: list[float] = []
    for r in rng.choices(rounds, k=len(rounds)):
        out += rng.choices(r, k=len(r))
    return out


def _interval(rounds: list[list[float]], stat: Callable[[list[float]], float], seed: int
              ) -> tuple[float, float, float]:
    rounds = [r for r in rounds if r]
    point = stat([x for r in rounds for x in r])
    rng = random.Random(seed)
    values = sorted(stat(_resample(rounds, rng)) for _ in range(RESAMPLES))
    return point, values[int(0.025 * RESAMPLES)], values[int(0.975 * RESAMPLES) - 1]


def median_interval(rounds: list[list[float]], seed: int = 0) -> tuple[float, float, float]:
    """(median, low, high) of the pooled steps, 95%."""
    return _interval(rounds, statistics.median, seed)


def mean_interval(rounds: list[list[float]], seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of the pooled steps, 95%."""
    return _interval(rounds, statistics.fmean, seed)


def mean_ratio_interval(num: list[list[float]], den: list[list[float]], seed: int = 0
                        ) -> tuple[float, float, float]:
    """(mean of `num`'s steps / mean of `den`'s, low, high), 95%: a speed-up is baseline over
    candidate, a regression current over baseline."""
    num = [r for r in num if r]
    den = [r for r in den if r]
    d = statistics.fmean([x for r in den for x in r])
    point = statistics.fmean([x for r in num for x in r]) / d if d > 0 else float("inf")
    rng = random.Random(seed)
    ratios = []
    for _ in range(RESAMPLES):
        n, b = statistics.fmean(_resample(num, rng)), statistics.fmean(_resample(den, rng))
        ratios.append(n / b if b > 0 else float("inf"))
    ratios.sort()
    return point, ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]


def median_spread(values: list[float]) -> tuple[float, float]:
    """The median of two values or more and its standard error: sqrt(pi/2) times the mean's, sigma
    from the interquartile range (a few outliers, a block beside an epoch's start, move neither)."""
    q = statistics.quantiles(values, n=4)
    se = math.sqrt(math.pi / 2) * (q[2] - q[0]) / 1.349 / math.sqrt(len(values))
    return statistics.median(values), se


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of `values` (nearest rank: one of them)."""
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]
