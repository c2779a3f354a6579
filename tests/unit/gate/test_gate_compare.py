"""The gate's comparison of two step-time samples: deterministic, and an interval that says when
there are too few steps to know the noise."""

from __future__ import annotations

import random

from gpubottle.gate.stats import compare


def _noisy(n: int, mean: float, sd: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [max(0.001, rng.gauss(mean, sd)) for _ in range(n)]


def test_compare_is_deterministic_and_sane():
    a, b = _noisy(30, 1.0, 0.05, 7), _noisy(30, 1.0, 0.05, 8)
    assert compare(a, b) == compare(a, b)
    c = compare(a, a)
    assert c.ratio == 1.0 and c.low <= 1.0 <= c.high
    assert compare([1.2] * 10, [1.0] * 10).verdict(0.1) == "fail"
    assert compare([1.0, 1.0], [1.2, 0.8]).high == float("inf")  # too few steps to know the noise
