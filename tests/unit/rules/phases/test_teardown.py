"""The script's own work after its last step (rules/phases/teardown.py): named with what the stacks
saw and its remedy where the kind of work has one; the interpreter's exit is not the script's."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import PROFILER_EVENTS
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import AccountEntry
from gpubottle.rules import diagnose
from gpubottle.rules.phases.teardown import decide_teardown, teardown_findings


def _ev(after: float, exit_s: float = 0.9, what: str | None = None, where: str | None = None) -> Evidence:
    ev = evidence(steps=60, step_s=0.01)
    ev.account = [AccountEntry(phase="startup", seconds=3.0, share=0.0),
                  AccountEntry(phase="train", seconds=0.75, share=0.0),
                  AccountEntry(phase="teardown", seconds=after + exit_s, share=0.0, what=what, where=where,
                               parts={"after the last step": after,
                                      "exit (workers and interpreter)": exit_s})]
    return ev


def test_a_profilers_events_processed_after_the_last_step_lead_with_a_schedule_as_the_fix() -> None:
    """Measured (tests/scripts/real_code/profiler_left_on.py, 400 steps): 20.1 s after the last
    step and 9.1 s of exit in a 33-s run whose training took 0.75 s."""
    ev = _ev(20.1, 9.1, f"<module>: {PROFILER_EVENTS}", "train.py:16")
    (f,) = teardown_findings(ev)
    assert f.category == v.TEARDOWN_BOUND and f.severity == "critical" and f.phase == "teardown"
    assert f.run_share is not None and abs(f.run_share - 20.1 / 32.95) < 1e-3
    assert "torch.profiler" in f.summary and "train.py:16" in f.summary
    assert [x.name for x in f.evidence] == ["after_last_step_share", "exit_s"]
    (fix,) = f.fixes
    assert "schedule=torch.profiler.schedule(" in fix.text and fix.where == "train.py:16"
    assert fix.expected is None  # no number: the one measured shape does not make a promise
    assert diagnose(ev).findings[0].category == v.TEARDOWN_BOUND  # it costs the run the most


def test_unknown_work_after_the_last_step_is_named_without_a_remedy_and_a_short_one_not_at_all() -> None:
    (f,) = teardown_findings(_ev(6.0, what="write_report", where="train.py:80"))
    assert f.fixes[0].text.startswith("write_report at train.py:80 takes 6.0 s")
    assert decide_teardown(_ev(0.5)) is None  # under a second
    assert decide_teardown(_ev(0.6, exit_s=30.0)) is None  # the exit alone: not the script's work
