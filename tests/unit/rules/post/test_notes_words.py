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


def test_hooks_that_took_a_share_of_a_run_of_short_steps_say_what_the_account_cannot_see() -> None:
    """benchmarks/tiny_steps.py (0.3-ms steps, 8 s): the hooks timed themselves at 323 ms of a
    10.4-s run; in place they cost the loop about as much again (hooks_in_place.py: +27 us a step
    where they timed ~13), which only a plain run beside it measures. A loop of 5-ms steps: no note."""
    from gpubottle.evidence.account import HOOKS_PART, OWN, AccountEntry

    def with_hooks(hooks_s: float) -> list[str]:
        ev = evidence(steps=40)
        ev.account = [AccountEntry(phase="startup", seconds=1.7, share=0.16),
                      AccountEntry(phase="train", seconds=7.7, share=0.74),
                      AccountEntry(phase="teardown", seconds=0.62, share=0.06),
                      AccountEntry(phase=OWN, seconds=0.1 + hooks_s, share=0.04,
                                   parts={HOOKS_PART: hooks_s, "its start": 0.1})]
        return run_notes(ev, v.COMPUTE_BOUND, [])

    [note] = with_hooks(0.323)
    assert note.startswith("gpubottle's hooks timed themselves at 3.1% of the run: on steps this short")
    assert "time a plain run (without gpubottle) against this one" in note
    assert with_hooks(0.02) == []


def test_hooks_measured_in_place_say_what_they_cost_and_how_it_was_measured() -> None:
    """Where the run measured the hooks in place (blocks of steps without them), the note gives
    that measurement instead of sending the user to time a plain run."""
    from gpubottle.evidence import InPlaceCost
    from gpubottle.evidence.account import HOOKS_PART, OWN, AccountEntry

    ev = evidence(steps=40)
    ev.steps.in_place = InPlaceCost(per_step_s=27.1e-6, spread_s=4.1e-6, blocks=12, block_steps=155,
                                    hooked_steps=19278)
    ev.account = [AccountEntry(phase="train", seconds=7.4, share=0.69),
                  AccountEntry(phase=OWN, seconds=0.61, share=0.06, parts={HOOKS_PART: 0.609})]
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note == ("gpubottle's hooks cost 7.6% of the run: 27.1 us a step (+-4.1) in place, measured "
                    "against 12 blocks of 155 steps it ran without them (left out of the statistics)")


def test_steps_the_hooks_left_out_later_are_said_apart_from_a_measurement() -> None:
    """The sparse blocks (probes/unhooked.py: later in the run, the hooks on one step in ten or more)
    are no measurement of the hooks' cost: said as what they are, from when they began, how sparse
    (an older run's records do not say: one in ten), beside a measurement or alone."""
    from gpubottle.evidence import InPlaceCost
    from gpubottle.evidence.account import HOOKS_PART, OWN, AccountEntry

    ev = evidence(steps=40)
    ev.steps.unhooked = list(range(20, 200))
    ev.steps.thinned, ev.steps.thinned_from_s = 180, 8.6
    ev.account = [AccountEntry(phase="train", seconds=40.0, share=0.99),
                  AccountEntry(phase=OWN, seconds=0.1, share=0.0025, parts={HOOKS_PART: 0.1})]
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note == ("gpubottle's hooks: from 9 s on they ran on one step in 10, to keep their cost "
                    "to steps this short down: 180 steps counted, not timed (left out of the "
                    "statistics); the account holds the hooks' own time, 0.2% of the run")
    ev.steps.unhooked = list(range(20, 220))  # 20 more in measurement blocks
    ev.steps.in_place = InPlaceCost(per_step_s=27.1e-6, spread_s=4.1e-6, blocks=12, block_steps=155,
                                    hooked_steps=19278)
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note.startswith("gpubottle's hooks cost 0.2% of the run: 27.1 us a step (+-4.1) in place")
    assert note.endswith("; from 9 s on they ran on one step in 10, to keep their cost to steps "
                         "this short down: 180 steps counted, not timed (left out of the statistics)")
    ev.steps.thinned_every = 38
    assert "from 9 s on they ran on one step in 38, to keep" in run_notes(ev, v.COMPUTE_BOUND, [])[0]
    ev.steps.in_place = None
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note.startswith("gpubottle ran 20 steps without its hooks to measure their cost in place")


def test_steps_run_without_hooks_are_said_whatever_the_hooks_share() -> None:
    """A run whose blocks measured the hooks under 1% of it, or ran too few blocks to tell: the
    steps it left out are said all the same."""
    from gpubottle.evidence import InPlaceCost
    from gpubottle.evidence.account import HOOKS_PART, OWN, AccountEntry

    ev = evidence(steps=40)
    ev.steps.unhooked = list(range(20, 30))
    ev.account = [AccountEntry(phase="train", seconds=20.0, share=0.99),
                  AccountEntry(phase=OWN, seconds=0.1, share=0.005, parts={HOOKS_PART: 0.1})]
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note == ("gpubottle ran 10 steps without its hooks to measure their cost in place (left out "
                    "of the statistics), too few blocks of them to tell: the account holds the hooks' "
                    "own time, 0.5% of the run")
    ev.steps.in_place = InPlaceCost(per_step_s=20e-6, spread_s=10e-6, blocks=6, block_steps=20,
                                    hooked_steps=5000)
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note.startswith("gpubottle's hooks cost 0.5% of the run: 20.0 us a step (+-10.0) in place")
    ev.steps.in_place = InPlaceCost(per_step_s=-25e-6, spread_s=30e-6, blocks=11, block_steps=90,
                                    hooked_steps=8000, step_s=0.0007, own_s=15e-6, resolved=False)
    [note] = run_notes(ev, v.COMPUTE_BOUND, [])
    assert note == ("gpubottle ran 10 steps without its hooks to measure their cost in place (left out "
                    "of the statistics): -25.0 us a step, +-30.0, not told apart from their own clocks' "
                    "15.0 (steps that vary this much: other threads or programs on the cores, or too few "
                    "blocks); the account holds the hooks' own time, 0.5% of the run")
