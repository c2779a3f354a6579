"""Step-time statistics for trials: means and medians with bootstrap intervals, speed-ups of the mean.

Speed-ups compare mean steps (the run's throughput), not medians: with workers, batches arrive in
bursts, so most steps find one ready and a few wait long, and the median says little about how fast
the run goes (measured: a loader starved 94% of its step had a median of 1.4 ms in one round).

Rounds of one setting are pooled; the interval of a median is resampled by rounds' blocks of steps
rather than single steps, since neighbouring steps share the machine's state (and a whole round can
run on a slower machine). Seeded: the same data always gives the same interval.
"""

from __future__ import annotations

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


def speedup_interval(base: list[list[float]], cand: list[list[float]], seed: int = 0
                     ) -> tuple[float, float, float]:
    """(baseline mean step / candidate mean step, low, high), 95%."""
    base = [r for r in base if r]
    cand = [r for r in cand if r]
    point = statistics.fmean([x for r in base for x in r]) / statistics.fmean(
        [x for r in cand for x in r])
    rng = random.Random(seed)
    ratios = sorted(statistics.fmean(_resample(base, rng)) / statistics.fmean(_resample(cand, rng))
                    for _ in range(RESAMPLES))
    return point, ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]
