"""Renderers: read a Report, write to the stream they are given; no collecting, no judging."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.report import Report


def steps_aside(report: Report, primary: str) -> str:
    """The line under a lead that is not the steps' own verdict: "training steps" where the clock
    counted optimizer steps or backward calls, the loop's steps in an inference loop."""
    what = "the training steps" if report.evidence.steps.training_clock else "the loop's steps"
    if primary == v.INCONCLUSIVE:  # (nothing below would say why: the lead is what was found)
        return f"({what} themselves: no verdict of the five)"
    return f"({what} themselves: {primary}, below)"
