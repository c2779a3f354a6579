"""The paired benchmark's rate after 15 s (benchmarks/paired.py): whole steps over their own span,
so a run of long steps is not off by a step's share at each end of the window."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from paired import _rate  # noqa: E402


def test_long_steps_at_the_same_pace_read_the_same_rate_wherever_they_fall():
    """Two runs of 0.45-s steps at the same pace, one started 0.4 s later: a count over the window
    read them 2 steps in 30 apart (~1.5% each way); whole steps over their span read them alike."""
    a = [0.05 + 0.45 * i for i in range(120)]
    b = [t + 0.4 for t in a]
    assert _rate(a, 15.0, 45.0) == pytest.approx(1 / 0.45)
    assert _rate(b, 15.0, 45.0) == pytest.approx(1 / 0.45)
    slower = [0.05 + 0.46 * i for i in range(120)]
    assert _rate(slower, 15.0, 45.0) / _rate(a, 15.0, 45.0) == pytest.approx(0.45 / 0.46)


def test_too_few_steps_have_no_rate():
    assert _rate([1.0, 20.0], 15.0, 45.0) == 0.0
    assert _rate([], 15.0, 45.0) == 0.0
