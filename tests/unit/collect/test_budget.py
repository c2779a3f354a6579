"""The collectors' CPU budget on a made-up clock and made-up CPU readings: py-spy's chunks report
what they used, and the next chunks' rates come down when the share of the run's cores passes the
budget (2% in the first 15 s, 0.3% after by default), and go back up when samples are cheap again."""

from __future__ import annotations

from gpubottle.collect.budget import CpuBudget

# The mechanism's arithmetic below is at a late budget of 1% (the default's is tested apart).
LATE = 0.01


def test_within_the_early_budget_nothing_changes():
    b = CpuBudget(cores=2.0, started=100.0, late_share=LATE)
    # 0.3 s of CPU over the first 15 s on 2 cores: 1% of them, under the early 2%.
    assert b.spent("py-spy 1", 100.0, 115.0, 0.3) == 1.0 and b.rate(10) == 10 and b.said() is None


def test_a_heavy_target_lowers_the_rate_to_what_the_budget_pays_for():
    b = CpuBudget(cores=2.0, started=100.0, late_share=LATE)
    b.spent("py-spy 1", 100.0, 115.0, 0.3)
    # After 15 s the budget is 1% of 2 cores (0.02 cores); py-spy used 1.2 s over 15 s: 0.08 cores.
    assert b.spent("py-spy 1", 115.0, 130.0, 1.2) == 0.25
    assert b.rate(5) == 1 and b.rate(10) == 2  # never below one sample a second
    [low] = b.lowered
    assert (low.t, low.share, low.budget, low.scale) == (30.0, 0.04, 0.01, 0.25)
    said = b.said()
    assert said is not None and "4.0% of the run's 2 cores at 30 s (budget 1%)" in said
    late = CpuBudget(cores=1.0, started=0.0)  # the default late budget, 0.3%: said as such, not "0%"
    late.spent("py-spy 1", 20.0, 30.0, 0.05)
    late_said = late.said()
    assert late_said is not None and "at 30 s (budget 0.3%)" in late_said
    assert "25% of its planned rate" in said


def test_every_collector_counts_and_one_long_gone_does_not():
    b = CpuBudget(cores=4.0, started=0.0, late_share=LATE)
    assert b.spent("py-spy 1", 15.0, 30.0, 0.3) == 1.0  # 0.5% of 4 cores alone: within 1%
    # The workers' py-spy beside it: 1.5% together, so both come down by a third.
    assert round(b.spent("py-spy 2", 15.0, 30.0, 0.6), 3) == 0.667
    b2 = CpuBudget(cores=4.0, started=0.0, late_share=LATE)
    b2.spent("py-spy 9", 15.0, 30.0, 3.0)  # a worker's py-spy, long ended
    assert b2.scale < 1.0
    before = b2.scale
    b2.spent("py-spy 1", 90.0, 105.0, 0.1)  # now only this one: cheap, the other is not counted
    assert b2.scale == min(1.0, before * 1.5)


def test_rates_come_back_when_samples_are_cheap_again():
    b = CpuBudget(cores=2.0, started=0.0, late_share=LATE)
    b.spent("py-spy 1", 15.0, 30.0, 1.2)
    assert b.scale == 0.25
    for t in (30.0, 45.0, 60.0, 75.0):
        b.spent("py-spy 1", t, t + 15.0, 0.05)  # 0.17% of the cores: well under
    assert b.scale == 1.0 and len(b.lowered) == 1


def test_py_spy_started_on_short_lived_workers_limits_new_attachments_not_the_rates():
    """15 epochs of 0.2 s, two new workers each (no persistent_workers): each worker's py-spy ended
    with its worker, ~20 ms of CPU, nearly all of it starting. Counted as spans, 28 of them read 5%
    of 2 cores and took the script's own sampling down to 5% of its rate, saving none of that."""
    b = CpuBudget(cores=2.0, started=0.0, late_share=LATE)
    assert b.may_attach(1.0)
    t = 1.0
    while b.may_attach(t):  # two workers an epoch, 0.2 s apart, 20 ms each
        b.ended(t, 0.02)
        b.ended(t, 0.02)
        t += 0.2
    # The early budget (2% of 2 cores over the last 5 s: 0.2 s of CPU) is passed after 6 epochs...
    assert round(t, 1) == 2.2 and b.scale == 1.0 and b.rate(10) == 10  # ...and the rates stay
    said = b.said(unsampled=6)
    assert said == ("gpubottle's collectors kept to their budget: py-spy left 6 short-lived DataLoader "
                    "workers unsampled (starting it on each cost more than the budget): the workers' "
                    "stack samples are fewer")
    # Once those starts are more than 5 s old, new workers are attached again.
    assert b.may_attach(t + 5.0)
    # After 15 s the budget is 1%: half as many starts in a window.
    late = CpuBudget(cores=2.0, started=0.0, late_share=LATE)
    late.ended(20.0, 0.08)
    assert late.may_attach(20.0)  # 0.08 s of 0.1
    late.ended(20.1, 0.03)
    assert not late.may_attach(20.2)


def test_a_running_chunk_is_judged_with_the_others_and_nothing_recorded():
    b = CpuBudget(cores=2.0, started=0.0, late_share=LATE)
    b.spent("py-spy 2", 0.0, 15.0, 0.3)  # a worker's py-spy: 1% of the 2 cores
    # The script's chunk 4 s in with 0.1 s: 1.25% of the cores alone, 2.25% with the worker's
    assert b.over("py-spy 1", 0.0, 4.0, 0.1) and not b.over("py-spy 1", 0.0, 4.0, 0.02)
    assert b.scale == 1.0 and b.lowered == []  # the ended chunk's `spent` lowers the rates
    assert b.over("py-spy 1", 15.0, 19.0, 0.1)  # after 15 s: 1% allowed, 1.25% alone


def test_where_the_run_keeps_its_cores_busy_py_spy_is_charged_what_it_displaces():
    """The same CPU readings, and the run's share of its one core read over the span: at 0.97 of
    it, 0.12 s of py-spy over 15 s (0.8% of the core) is charged 1.5x where the span began in the
    first 15 s (1.2%, over the late 1%), 4x past them (3.2%: a 1-a-second chunk's steps measured
    in place), and the rates come down; at 0.4 (a core to spare) and without readings, its CPU
    alone holds."""
    from gpubottle.collect.budget import DISPLACED, DISPLACED_LATE

    def lowered_with(busy: float | None, t0: float = 15.0) -> CpuBudget:
        b = CpuBudget(cores=1.0, started=0.0, late_share=LATE)
        if busy is not None:
            for t in range(int(t0) + 1, int(t0) + 16):
                b.busy(float(t), busy)
        b.spent("py-spy 1", t0, t0 + 15.0, 0.12)
        return b

    busy = lowered_with(0.97)
    assert DISPLACED_LATE == 4.0 and abs(busy.scale - 0.01 / 0.032) < 1e-9
    [low] = busy.lowered
    assert low.displaced and low.late and low.share == 0.032
    said = busy.said()
    assert said is not None and "cost the run 3.2% of its 1 core (their CPU, 1.5x" in said
    assert "py-spy's 4x after the first 15 s: the training time it displaced" in said
    early = lowered_with(0.97, t0=14.0)  # begun before the edge: its py-spy start is in it
    assert DISPLACED == 1.5 and abs(early.scale - 0.01 / 0.012) < 1e-9
    [low] = early.lowered
    assert low.displaced and not low.late and low.share == 0.012
    said = early.said()
    assert said is not None and "(their CPU, 1.5x where the run kept its cores busy: the" in said
    for spare in (lowered_with(0.4), lowered_with(None)):
        assert spare.scale == 1.0 and spare.lowered == []
    # Readings from before the span do not count for it (a busy start, then a loop that waits).
    b = CpuBudget(cores=1.0, started=0.0, late_share=LATE)
    for t in range(1, 15):
        b.busy(float(t), 1.0)
    b.busy(20.0, 0.2)
    assert b.spent("py-spy 1", 15.0, 30.0, 0.12) == 1.0


def test_the_supervisors_watch_feeds_the_runs_share_of_its_cores(tmp_path):
    """Collectors.watch (each second of the run) passes the process tree's latest CPU, the run's
    processes together, to the budget as the share of the cores the run may use."""
    from types import SimpleNamespace

    from gpubottle.collect.leakwatch import LeakWatch
    from gpubottle.launch.collectors import Collectors
    from gpubottle.rundir import RunDir

    col = Collectors(RunDir(str(tmp_path)), 0.1, stacks=False, gpu=False)
    col.budget = CpuBudget(cores=2.0, started=0.0, late_share=LATE)
    col._leaks = LeakWatch(started=0.0)
    col.sampler = SimpleNamespace(latest={"cpu": {"11": 1.5, "12": 0.4}})  # type: ignore[assignment]
    for t in range(16, 31):
        col.watch(float(t))
    # 1.9 of 2 cores: 0.24 s of py-spy over 15 s (0.8%) is charged 1.2%, over the late 1%.
    assert col.budget.spent("py-spy 11", 15.0, 30.0, 0.24) < 1.0 and col.budget.lowered[0].displaced


def test_the_supervisors_own_cpu_counts_against_the_budget_beside_py_spy():
    """The supervisor's sampling (recorded, it has no rate to lower) leaves py-spy the rest: its 0.6%
    of a core alone is within 1%, and py-spy's 0.6% would be too, but not the two together: py-spy
    gets the 0.4% left, two thirds of its rate."""
    alone = CpuBudget(cores=1.0, started=0.0, late_share=LATE)
    assert alone.spent("py-spy 1", 15.0, 30.0, 0.09) == 1.0  # 0.6% of the core
    b = CpuBudget(cores=1.0, started=0.0, late_share=LATE)
    b.record("gpubottle", 25.0, 30.0, 0.03)  # 0.6% over its last 5 s
    assert b.scale == 1.0  # recorded: no rate changes until py-spy's next look
    assert round(b.spent("py-spy 1", 15.0, 30.0, 0.09), 3) == 0.667
    [low] = b.lowered
    assert low.share == 0.012
    # A supervisor span long over (a profile() watcher that stopped) is not counted.
    b.record("gpubottle", 0.0, 5.0, 1.0)
    assert b.spent("py-spy 1", 60.0, 75.0, 0.03) == 1.0


def test_the_scale_is_what_the_budget_pays_for_over_the_next_chunks_plan():
    """A first chunk's rest at 4 a second (10 planned, scale 0.4) ends as the late 1% begins, past
    it: 1.6% of the core for py-spy, 0.4% for the supervisor. The budget pays py-spy 0.6%, 1.5 a
    second, which is 0.75 of the late plan of 2 a second (moved by the same ratio as without a plan,
    0.4 x 0.375: 0.15, 0.3 a second, a fifth of that)."""
    b = CpuBudget(cores=1.0, started=0.0, scale=0.4, late_share=LATE)
    b.record("gpubottle", 15.0, 16.0, 0.004)
    assert b.spent("py-spy 1", 4.0, 16.0, 0.192, rate=4.0, planned=2) == 0.75 and b.rate(2) == 1  # (1.5 down)
    assert b.lowered[-1].scale == 0.75 and b.lowered[-1].share == 0.02
    same = CpuBudget(cores=1.0, started=0.0, scale=0.4, late_share=LATE)
    same.record("gpubottle", 15.0, 16.0, 0.004)
    assert round(same.spent("py-spy 1", 4.0, 16.0, 0.192), 3) == 0.15
    # Well under the budget the rate comes back by RECOVER a look, at most to the plan.
    cheap = CpuBudget(cores=1.0, started=0.0, scale=0.25, late_share=LATE)
    assert cheap.spent("py-spy 1", 30.0, 60.0, 0.006, rate=0.5, planned=2) == 0.375


def test_under_one_sample_a_second_the_budget_leaves_gaps_between_chunks():
    """py-spy's least rate is 1 a second: where the budget pays for less, a chunk at 1 a second
    follows a stretch left unsampled, the two at the mean rate; the gap counts in the next look."""
    b = CpuBudget(cores=1.0, started=0.0, late_share=LATE)
    assert b.gap_s(2, 15.0) == 0.0  # at the planned rate: no gap
    b.spent("py-spy 1", 15.0, 30.0, 0.6)  # 4% of the core: scale 0.25, a mean of 0.5 a second
    assert b.scale == 0.25 and b.rate(2) == 1
    assert b.gap_s(2, 15.0) == 15.0  # 15 s at 1 a second, 15 s without: 0.5 a second
    assert b.gap_s(10, 15.0) == 0.0  # 2.5 a second: a rate, no gap
    # The next chunk's look counts the gap before it: 15 samples' CPU over 30 s is within budget
    # at this mean, and the scale holds (not lowered again for the same cost a sample).
    assert b.spent("py-spy 1", 30.0, 60.0, 0.15) == 0.25 and len(b.lowered) == 1
    low = CpuBudget(cores=1.0, started=0.0, scale=0.05, late_share=LATE)
    assert low.gap_s(2, 60.0) == 120.0  # at most GAP_MAX_S unsampled
    # The report says how long py-spy left the run unsampled so.
    b.unsampled_for(15.0)
    b.unsampled_for(12.4)
    said = b.said()
    assert said is not None and "in stretches, 27 s left unsampled between them" in said


def test_the_default_late_budget_leaves_a_dear_target_sampled_in_stretches_a_cheap_one_at_its_plan():
    """The default after 15 s, on what benchmarks/many_threads.py measured on one busy core
    (2026-12-04): the supervisor 0.11% of the core, py-spy 0.32% at 1 a second (2.3 ms a sample on
    17 threads), the supervisor's charged DISPLACED times that, py-spy's DISPLACED_LATE (its chunks'
    steps measured in place). Its rate pays for what the supervisor leaves: about one sample in 10 s,
    in stretches. The steady loop's samples (0.2 ms) at the late plan of 2
    a second come to 0.31% beside its supervisor's 0.1% (0.16% and 0.15% charged): a hair past it,
    1 a second, and no stretch left unsampled."""
    from gpubottle.collect.budget import DISPLACED, DISPLACED_LATE, GAP_MAX_S, LATE_SHARE

    dear = CpuBudget(cores=1.0, started=0.0)
    assert dear.allowed(20.0) == LATE_SHARE < 0.005  # under half the 1% goal: the hooks' room
    for t in range(16, 46):
        dear.busy(float(t), 1.0)
    dear.record("supervisor", 15.0, 45.0, 0.0011 * 30)
    scale = dear.spent("py-spy 1", 15.0, 45.0, 0.0032 * 30, rate=1.0, planned=1)
    left = LATE_SHARE - 0.0011 * DISPLACED  # what the supervisor leaves py-spy
    assert abs(scale - left / (0.0032 * DISPLACED_LATE)) < 1e-3 and 0.08 < scale < 0.15
    assert dear.rate(1) == 1 and dear.gap_s(1, 15.0) == GAP_MAX_S  # 15 s sampled after 2 min without

    cheap = CpuBudget(cores=1.0, started=0.0)
    for t in range(16, 46):
        cheap.busy(float(t), 1.0)
    cheap.record("supervisor", 15.0, 45.0, 0.001 * 30)  # (0.1% of the core there too)
    assert abs(cheap.spent("py-spy 1", 15.0, 45.0, 0.0002 * 2 * 30, rate=2.0, planned=2) - 0.9375) < 1e-9
    assert cheap.rate(2) == 1 and cheap.gap_s(2, 60.0) == 0.0


def test_past_the_early_budget_a_span_mostly_before_it_is_not_held_against_the_late_one():
    """The supervisor samples at 2 a second until 15 s and 1 after: its span from 10.4 to 16.4 s
    (0.33% of the core on 17 threads, charged 1.5x: past the late 0.3% alone) says what the early
    rates cost. Past the edge it is left out until one mostly after it comes; py-spy's rate then
    pays for what that one leaves. A running chunk across the edge is judged by both budgets."""
    b = CpuBudget(cores=1.0, started=0.0, late_share=0.003)
    for t in range(1, 46):
        b.busy(float(t), 1.0)
    b.record("gpubottle", 10.4, 16.4, 0.0033 * 6.0)
    # py-spy at 1 a second over 2 s, 2.3 ms a sample: 0.92% charged (4x past the edge), a third of
    # its rate paid for, under GAP_CUT: the chunk ends (charged 1.5x it ran on to 21 s)
    assert b.over("py-spy 1", 17.0, 19.0, 0.0046, rate=1)
    # ...but a chunk begun before the edge is judged by both budgets at 1.5x: its py-spy start is in it
    assert not b.over("py-spy 1", 13.0, 16.0, 0.0069, rate=1)
    b.record("gpubottle", 16.4, 21.4, 0.0011 * 5.0)  # the supervisor's first late span
    assert b.over("py-spy 1", 19.0, 21.0, 0.0046, rate=1)
    paid = (0.003 - 0.0011 * 1.5) / (0.0023 * 4.0)  # what the supervisor leaves, over py-spy's cost
    assert 0.1 < paid < 0.2
    assert abs(b.spent("py-spy 1", 19.0, 21.0, 0.0046, rate=1.0, planned=1) - paid) < 1e-9
    # A chunk from 13 to 16 s at 1 a second (its py-spy start in it): within 2% then 0.3%
    assert abs(b.allowed_over(13.0, 16.0) - (2 * 0.02 + 0.003) / 3) < 1e-12
    assert b.allowed_over(20.0, 25.0) == 0.003 and b.allowed_over(5.0, 10.0) == 0.02
