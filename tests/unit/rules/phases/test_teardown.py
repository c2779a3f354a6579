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


def test_a_final_evaluation_one_row_at_a_time_leads_with_its_rows_at_once() -> None:
    """final_eval's shape: after training, `for i in range(len(Xt)): pred = model(Xt[i:i + 1])`
    over 100,000 rows, 2.1 s of a 5.1-s run: "make it cheaper, or leave it out" alone before."""
    ev = _ev(2.1, 0.6, what="pred = model(Xt[i:i + 1]).argmax(1)", where="final_eval.py:17")
    ev.account[2].row_loop, ev.account[2].row_loop_text = "final_eval.py:16", "for i in range(len(Xt)):"
    ev.account[2].row_loop_share = 1.0
    (f,) = teardown_findings(ev)
    assert f.summary.endswith("at final_eval.py:17, one row at a time in a Python loop (final_eval.py:16)")
    first, second = f.fixes
    assert first.where == "final_eval.py:16" and "all rows at once" in first.text
    assert first.text.startswith("100% of the work after the last step is a Python loop over rows")
    assert second.text.startswith("pred = model(Xt[i:i + 1]).argmax(1) at final_eval.py:17 takes 2.1 s")
