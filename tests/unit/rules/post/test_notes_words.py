"""The report's notes, once each sentence form: a job's ranks, why there is no verdict, missing
evidence."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import CollectorStatus, RankEvidence
from gpubottle.rules.post.notes import run_notes


def test_why_there_is_no_verdict() -> None:
    ev = evidence(steps=3)
    ev.steps.source = "none"
    assert run_notes(ev, v.INCONCLUSIVE, [])[0].startswith("no training steps were seen: no "
                                                           "optimizer.step(), backward()")
    ev = evidence(steps=4)
    assert run_notes(ev, v.INCONCLUSIVE, []) == [
        "only 2 step(s) measured after 2 warm-up step(s); at least 5 are needed for a verdict: run "
        "longer (or raise --steps)"]
    ev = evidence(steps=40)
    assert run_notes(ev, v.INCONCLUSIVE, [])[0].startswith("the loop neither waits for data nor keeps")
    assert run_notes(ev, v.DATA_STARVED, []) == []
    ev.run.collectors["py-spy"] = CollectorStatus(ok=False, reason="ptrace not permitted")
    assert run_notes(ev, v.DATA_STARVED, []) == ["missing evidence - py-spy: ptrace not permitted"]


def test_a_job_says_whose_findings_these_are_and_who_failed() -> None:
    ev = evidence(steps=40, exception="ValueError: bad batch on rank 1")
    ev.ranks = [RankEvidence(rank=0, file="r0", steps=45, mean_step_s=0.01, status="killed"),
                RankEvidence(rank=1, file="r1", steps=45, mean_step_s=0.01, status="failed",
                             exit_code=1, exception="ValueError: bad batch on rank 1", ended_at=5.0)]
    ev.shown_rank = 1
    assert run_notes(ev, v.DATA_STARVED, []) == [
        "2 ranks; the findings are rank 1's (it failed first)",
        "ValueError: bad batch on rank 1 (exit status 1)",
        "rank 0 ended without a word: killed (by the launcher after another rank failed, or by a "
        "signal)"]
    ev.shown_rank = 0  # rank 1 failed first with no verdict of its own: rank 0's findings
    assert run_notes(ev, v.DATA_STARVED, [])[0] == (
        "2 ranks; the findings are rank 0's (rank 1, which failed first, has no verdict of its own)")
    ev.ranks[0].mean_step_s = 0.03  # ...and rank 0 sets the pace: both are said
    ev.ranks[0].status = "completed"
    assert run_notes(ev, v.DATA_STARVED, [])[0] == (
        "2 ranks; the findings are rank 0's (it sets the pace: the other ranks wait for it; rank 1, "
        "which failed first, has no verdict of its own)")
    ev.ranks[0].mean_step_s = 0.01
    ev.shown_rank = 1
    for r in ev.ranks:
        r.status, r.exit_code, r.exception = "completed", 0, None
    ev.run.exception = None
    ev.ranks[1].mean_step_s = 0.03  # three times rank 0's step: the others wait for it
    assert run_notes(ev, v.DATA_STARVED, [])[0] == (
        "2 ranks; the findings are rank 1's (it sets the pace: the other ranks wait for it)")
    ev.ranks[1].mean_step_s = 0.01
    assert run_notes(ev, v.DATA_STARVED, [])[0].endswith(
        "(no rank holds the others back: they spend their steps alike)")
