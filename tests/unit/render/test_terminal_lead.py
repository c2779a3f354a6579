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


def test_a_run_that_raised_says_what_it_raised_under_its_exit():
    """The traceback passed through to the terminal, often pages above the report: the report's
    last lines say what ended the run, its first line, cut to fit."""
    import io

    from gpubottle.render.terminal import render_terminal

    ev = evidence(steps=40, exit_code=1, exception="RuntimeError: Expected i < index_size to be "
                  "true, but got false.\n(more lines)")
    ev.run.stop_reason = "failed"
    out = io.StringIO()
    render_terminal(diagnose(ev), out, width=80)
    text = out.getvalue()
    assert "Run: exit 1, failed" in text
    assert "Raised: RuntimeError: Expected i < index_size to be true, but got false.\n" in text
    assert "(more lines)" not in text
    out = io.StringIO()
    render_terminal(diagnose(evidence(steps=40)), out, width=80)
    assert "Raised:" not in out.getvalue()


def test_a_lead_beside_steps_with_no_verdict_does_not_point_below():
    ev = evidence(steps=50, step_s=0.1, wait_s=0.0, main=0.2)
    aside = steps_aside(diagnose(ev), "inconclusive")
    assert aside == "(the training steps themselves: no verdict of the five)"
