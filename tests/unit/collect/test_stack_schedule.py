"""py-spy's sampling schedule: each chunk's rate and length (the sampler itself, with a stand-in
for py-spy: tests/e2e/test_stack_sampler.py)."""

from __future__ import annotations

import pytest

from gpubottle.collect.stacks import CHUNK_S, chunk_rate, chunk_seconds

# The mechanism's arithmetic below is at a late budget of 1% (the default's is tested apart).
LATE = 0.01


def test_the_schedule_in_numbers():
    assert [chunk_rate(10, k) for k in range(6)] == [10, 2, 2, 2, 2, 2]
    # (one py-spy start after the first 15 s, not three more in the first minute)
    assert [chunk_seconds(CHUNK_S, k) for k in (0, 1, 5)] == [13.0, 52.0, 52.0]
    assert chunk_rate(1, 5) == 1  # never below one a second
    # Samples dear to take (17 Python threads to walk: 1.0 ms of py-spy's CPU each, against 0.2 ms
    # on a loop of one): the later rate halved, the first 15 s as they were
    assert [chunk_rate(10, k, dear=True) for k in range(3)] == [10, 1, 1]
    assert chunk_rate(20, 1, dear=True) == 2 and chunk_rate(1, 1, dear=True) == 1


@pytest.fixture(autouse=True)
def _ticks_only(monkeypatch):
    """These tests give py-spy's CPU as /proc's ticks; the precise reading of a real process's
    threads (procfs.threads_cpu_precise, tested on this process) is left out."""
    from gpubottle.collect import stacks

    monkeypatch.setattr(stacks.procfs, "threads_cpu_precise", lambda pid: None)


class _PySpy:
    """A running py-spy as check_budget sees it: its pid, and the Ctrl-C it would be sent."""

    pid = 4242

    def __init__(self) -> None:
        self.signals: list[int] = []

    def poll(self) -> None:
        return None

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)


def test_a_chunk_past_the_budget_is_ended_and_its_rest_only_far_past_it(monkeypatch):
    """The live look ends a chunk past the budget; the chunk that runs the rest of it at the lowered
    rate is ended again only past REST_MARGIN times the budget (each py-spy start costs 15-70 ms of
    CPU, itself read as over the budget at the rest's first look: on 17 threads the first 15 s
    restarted every ~4 s, lowering the rate a step at a time)."""
    import signal
    import time
    from types import SimpleNamespace

    from gpubottle.collect import stacks
    from gpubottle.collect.budget import CpuBudget

    now = time.monotonic()
    span = stacks.LIVE_MIN_S + 1.0
    for cpu_share, rest, ended in ((0.02, False, True), (0.02, True, False), (0.05, True, True),
                                   (0.005, False, False)):
        # (py-spy's CPU over the chunk so far, as /proc gives it with its reaped children's)
        monkeypatch.setattr(stacks.procfs, "cpu_and_children_seconds",
                            lambda pid, c=cpu_share: (c * span, 0.0) if pid == _PySpy.pid else None)
        owner = SimpleNamespace(budget=CpuBudget(cores=1.0, started=now - 100.0,
                                                 late_share=LATE))  # 1% allowed
        chunk = stacks._ProcessStacks(owner, 1, 10, 0.0)  # type: ignore[arg-type]
        spy = _PySpy()
        chunk.proc = spy  # type: ignore[assignment]
        chunk.chunk_t0, chunk.chunk_end, chunk.rest, chunk.chunk_rate = now - span, now + 10.0, rest, 5
        chunk.check_budget(now)
        assert chunk.cut is ended and spy.signals == ([signal.SIGINT] if ended else []), (cpu_share, rest)


def test_a_chunk_at_one_a_second_is_ended_only_where_its_rest_would_wait_a_stretch(monkeypatch):
    """At 1 a second (py-spy's least rate) a chunk past the budget is ended only where the budget
    pays for under GAP_CUT samples a second: its rest then comes after a stretch unsampled. Paying
    for 0.67 a second it runs on (ending it would cost a py-spy start for a third of its samples);
    paying for 0.25, it ends, and the rest of it waits gap_s: 3 s unsampled a second sampled."""
    import signal
    import time
    from types import SimpleNamespace

    from gpubottle.collect import stacks
    from gpubottle.collect.budget import GAP_CUT, CpuBudget

    assert GAP_CUT == 0.5
    now = time.monotonic()
    span = stacks.LIVE_MIN_S + 1.0
    for cpu_share, ended in ((0.015, False), (0.04, True)):
        monkeypatch.setattr(stacks.procfs, "cpu_and_children_seconds",
                            lambda pid, c=cpu_share: (c * span, 0.0) if pid == _PySpy.pid else None)
        budget = CpuBudget(cores=1.0, started=now - 100.0, late_share=LATE)  # 1% allowed
        chunk = stacks._ProcessStacks(SimpleNamespace(budget=budget), 1, 10, 0.0)  # type: ignore[arg-type]
        spy = _PySpy()
        chunk.proc = spy  # type: ignore[assignment]
        chunk.chunk_t0, chunk.chunk_end, chunk.chunk_rate = now - span, now + 30.0, 1
        chunk.check_budget(now)
        assert chunk.cut is ended and spy.signals == ([signal.SIGINT] if ended else []), cpu_share
        if ended:  # what the chunk's end records, as _loop does, and the gap before its rest
            budget.spent("py-spy 1", now - span, now, cpu_share * span, rate=1, planned=1)
            assert abs(budget.scale - 0.25) < 1e-9 and abs(budget.gap_s(1, 30.0) - 90.0) < 1e-6


def test_a_chunk_whose_samples_got_dearer_is_ended_by_its_last_seconds(monkeypatch):
    """A first chunk cheap through the script's imports (0.5% of the core over 3 s), then 3% of it
    over the 2 s to this look (the script's threads started): the whole chunk reads 1.5%, under the
    early 2%, but its last RECENT_S pass it: the chunk ends, and its rest's rate is set from those
    seconds, not from the whole chunk."""
    import time
    from types import SimpleNamespace

    from gpubottle.collect import stacks
    from gpubottle.collect.budget import CpuBudget

    now = time.monotonic()
    readings = iter([(0.015, 0.0), (0.04, 0.0), (0.075, 0.0)])  # py-spy's CPU at three looks
    monkeypatch.setattr(stacks.procfs, "cpu_and_children_seconds", lambda pid: next(readings))
    owner = SimpleNamespace(budget=CpuBudget(cores=1.0, started=now - 1.0,
                                                 late_share=LATE))  # 2% allowed (early)
    chunk = stacks._ProcessStacks(owner, 1, 10, 0.0)  # type: ignore[arg-type]
    spy = _PySpy()
    chunk.proc = spy  # type: ignore[assignment]
    chunk.chunk_t0, chunk.chunk_end, chunk.rest, chunk.chunk_rate = now - 5.0, now + 12.0, False, 10
    chunk.check_budget(now - 2.0)
    chunk.check_budget(now - 1.0)  # (1 s since the last look: too few of /proc's ticks to judge)
    assert not chunk.cut and chunk.looked[-1] == (now - 1.0, 0.04)
    chunk.check_budget(now)
    assert chunk.cut and chunk.cut_span is not None and spy.signals
    assert chunk.cut_span[0] == now - 2.0 and round(chunk.cut_span[2], 3) == 0.06
    # The rest's rate: 2% of the core at 10 a second's 3% is 6.7 a second.
    b = owner.budget
    assert round(b.spent("py-spy 1", *chunk.cut_span, rate=10, planned=10), 3) == 0.667


def test_a_chunk_a_little_past_the_budget_runs_on_where_its_rate_would_stay():
    """Ended early only where that lowers the rate (whole numbers, rounded down): 10% past the
    budget, a chunk at 4 a second pays for 3.6, so 3: ended; one at 1 a second stays at 1: not
    (its rest would start py-spy again for the same rate)."""
    from gpubottle.collect.budget import CpuBudget

    b = CpuBudget(cores=1.0, started=0.0, late_share=LATE)  # late: 1% allowed
    assert b.over("py-spy 1", 20.0, 22.0, 0.022, rate=4)  # 1.1% of the core
    assert not b.over("py-spy 1", 20.0, 22.0, 0.022, rate=1)
    assert b.over("py-spy 1", 20.0, 22.0, 0.022)  # (no rate: past the budget is enough)
    # Within the budget nothing ends, whatever the rate.
    assert not b.over("py-spy 1", 20.0, 22.0, 0.019, rate=10)


def test_a_rest_is_judged_from_its_third_second_without_its_own_start(monkeypatch):
    """The rest of an ended chunk is read from 1 s in: its py-spy start (40 ms in its first
    second, 2% of the core over 2 s) is left out of the window it is judged by at 3 s, which
    holds it at the budget itself, not at REST_MARGIN times it."""
    import time
    from types import SimpleNamespace

    from gpubottle.collect import stacks
    from gpubottle.collect.budget import CpuBudget

    now = time.monotonic()
    for later, ended in ((0.01, False), (0.05, True)):  # py-spy's CPU from 1 s to 3 s: 0.5%, 2.5%
        readings = iter([(0.04, 0.0), (0.04 + later / 2, 0.0), (0.04 + later, 0.0)])
        monkeypatch.setattr(stacks.procfs, "cpu_and_children_seconds", lambda pid, r=readings: next(r))
        owner = SimpleNamespace(budget=CpuBudget(cores=1.0, started=now - 5.0, late_share=LATE))  # 2% allowed
        chunk = stacks._ProcessStacks(owner, 1, 10, 0.0)  # type: ignore[arg-type]
        spy = _PySpy()
        chunk.proc = spy  # type: ignore[assignment]
        chunk.chunk_t0, chunk.chunk_end, chunk.rest, chunk.chunk_rate = now - 3.0, now + 8.0, True, 4
        chunk.check_budget(now - 2.5)  # (before 1 s: not read at all)
        assert chunk.looked == []
        for t in (now - 2.0, now - 1.0, now):
            chunk.check_budget(t)
        assert chunk.cut is ended and bool(spy.signals) is ended, later


def test_a_chunk_ended_by_its_whole_span_takes_its_rest_rate_from_the_whole_span(monkeypatch):
    """A burst of CPU in a chunk's first second (10% of the core over 3 s), nothing since: the whole
    span passes the budget and ends the chunk, the last 2 s do not: the rest's rate comes from the
    whole span (cut_span None), not from the cheap last seconds, which would raise it again."""
    import time
    from types import SimpleNamespace

    from gpubottle.collect import stacks
    from gpubottle.collect.budget import CpuBudget

    now = time.monotonic()
    readings = iter([(0.3, 0.0), (0.3, 0.0), (0.3, 0.0)])
    monkeypatch.setattr(stacks.procfs, "cpu_and_children_seconds", lambda pid: next(readings))
    owner = SimpleNamespace(budget=CpuBudget(cores=1.0, started=now - 1.0, late_share=LATE))  # 2% allowed
    chunk = stacks._ProcessStacks(owner, 1, 10, 0.0)  # type: ignore[arg-type]
    spy = _PySpy()
    chunk.proc = spy  # type: ignore[assignment]
    chunk.chunk_t0, chunk.chunk_end, chunk.rest, chunk.chunk_rate = now - 3.0, now + 12.0, False, 10
    for t in (now - 2.0, now - 1.0, now):
        chunk.check_budget(t)
    assert chunk.cut and spy.signals and chunk.cut_span is None


def test_the_watch_for_workers_slows_where_none_came(tmp_path):
    """Four looks a second for new DataLoader workers through the first 15 s, and from then on while
    any worker has been seen; a script with none by then is looked at once a second (each look
    wakes the supervisor on the training's core)."""
    from types import SimpleNamespace

    from gpubottle.collect.stacks import StackSampler

    s = StackSampler(str(tmp_path), binary="py-spy")
    s._samplers[100] = SimpleNamespace()  # type: ignore[assignment]  # (the script's own py-spy)
    assert s.watch_interval(0.0) == s.watch_interval(14.9) == StackSampler.WATCH_S == 0.25
    assert s.watch_interval(15.0) == s.watch_interval(600.0) == StackSampler.QUIET_WATCH_S == 1.0
    s._samplers[101] = SimpleNamespace()  # type: ignore[assignment]  # a worker came, late
    assert s.watch_interval(600.0) == 0.25
    del s._samplers[101]
    s._unsampled.add(102)  # one left unsampled (the budget spent) was seen all the same
    assert s.watch_interval(600.0) == 0.25
