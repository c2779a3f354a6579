"""Comparing two step-time distributions without mistaking noise for a change.

The statistic is the ratio of mean step times (wall time, hence throughput, is the sum of the steps;
long pauses such as validation are left out before this), with a 95% bootstrap confidence interval
from resampling each side's steps. A budget fails when the estimated slowdown exceeds it and the
slowdown is outside the noise (the interval excludes "no change"); it is inconclusive when the
estimate exceeds it but could be noise; it passes when the estimate is within it (the message says
when the noise is wider than the budget). The resampling is seeded: same inputs, same answer.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpubottle.clock import MIN_COMPARED
from gpubottle.stats import mean_ratio_interval


@dataclass
class Comparison:
    ratio: float  # mean(current) / mean(baseline)
    low: float  # 95% interval of the ratio
    high: float
    n_current: int
    n_baseline: int

    def verdict(self, budget: float) -> str:
        """pass | fail | inconclusive for a budget of `budget` (0.10 = at most 10% slower)."""
        if self.ratio <= 1.0 + budget:
            return "pass"
        if self.low > 1.0:
            return "fail"
        return "inconclusive"


def compare(current: list[float], baseline: list[float], seed: int = 0) -> Comparison:
    if not current or not baseline:
        raise ValueError("both sides need steps")
    mc, mb = statistics.fmean(current), statistics.fmean(baseline)
    ratio = mc / mb if mb > 0 else float("inf")
    if len(current) < MIN_COMPARED or len(baseline) < MIN_COMPARED:
        # Too few steps to know the spread: only the very same steps are certain.
        if sorted(current) == sorted(baseline):
            return Comparison(ratio, 1.0, 1.0, len(current), len(baseline))
        return Comparison(ratio, 0.0, float("inf"), len(current), len(baseline))
    _, low, high = mean_ratio_interval([current], [baseline], seed)
    return Comparison(ratio, min(low, ratio), max(high, ratio), len(current), len(baseline))
