"""The line under a lead that is not the steps' own verdict names what the steps are."""

from __future__ import annotations

from factories import evidence

from gpubottle.render import steps_aside
from gpubottle.rules import diagnose


def test_the_aside_says_training_steps_only_where_the_loop_trains():
    ev = evidence(steps=40)
    report = diagnose(ev)
    assert steps_aside(report, "compute-bound") == "(the training steps themselves: compute-bound, below)"
    ev.steps.source = "dataloader"  # an inference loop: steps run fetch to fetch
    assert steps_aside(diagnose(ev), "compute-bound") == "(the loop's steps themselves: compute-bound, below)"
