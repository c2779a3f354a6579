"""The process-tree sampler's schedule on a fake clock (as pyinstrument's tests drive theirs): which
records each tick writes, and the tick rate over a run's life, without waiting in real time. The
readings are real: this process's /proc files."""

from __future__ import annotations

import io
import json
import os
from collections import Counter

from gpubottle.collect.process_tree import FAST_FOR_S, SLOW_AFTER_S, TreeSampler


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _ticks(seconds: float, step: float) -> Counter[str]:
    clock = FakeClock()
    out = io.StringIO()
    sampler = TreeSampler(os.getpid(), out, interval=step, now=clock)
    sampler._tree = {os.getpid()}
    for _ in range(round(seconds / step)):
        sampler._tick()
        clock.t += step
    sampler._flush()
    return Counter(json.loads(line)[0] for line in out.getvalue().splitlines())


def test_each_kind_of_record_comes_at_its_own_pace():
    kinds = _ticks(10.0, 0.1)  # 100 ticks of 0.1 s on the fake clock
    assert 95 <= kinds["c"] <= 100  # CPU every tick (the first has no rate yet)
    assert 19 <= kinds["m"] <= 21  # memory twice a second
    assert 9 <= kinds["s"] <= 10  # gpubottle's own CPU once a second
    assert 4 <= kinds["x"] <= 5  # outside load every two seconds


def test_the_tick_rate_slows_over_the_run():
    s = TreeSampler(os.getpid(), io.StringIO(), interval=0.2, now=FakeClock())
    assert s.interval_at(0.0) == s.interval_at(FAST_FOR_S - 0.1) == 0.2
    assert s.interval_at(FAST_FOR_S) == 0.5  # at most 2 a second
    assert s.interval_at(SLOW_AFTER_S) == 1.0  # 1 a second after a minute
    fast = TreeSampler(os.getpid(), io.StringIO(), interval=2.0, now=FakeClock())
    assert fast.interval_at(SLOW_AFTER_S + 1) == 2.0  # never faster than asked


def test_a_process_whose_pss_read_is_dear_is_read_less_often(monkeypatch):
    """smaps_rollup walks every mapping (about 7 ms of CPU a GB resident, under the lock the
    process's page faults take): a read that cost 40 ms is repeated every 20 s, not every 5 s."""
    from gpubottle.collect import process_tree, procfs

    reads: list[float] = []
    clock = FakeClock()
    cost = {"s": 0.0}
    thread_time = iter(range(10**6))

    def fake_thread_time() -> float:
        return next(thread_time) * cost["s"]  # each call: one read's cost later

    def pss(pid: int):
        reads.append(clock.t)
        return (100 << 20, 50 << 20)

    monkeypatch.setattr(procfs, "pss_uss_bytes", pss)
    monkeypatch.setattr(process_tree.time, "thread_time", fake_thread_time)
    for read_cost, every in ((0.001, process_tree.PSS_EVERY_S), (0.040, 0.040 / process_tree.PSS_COST_SHARE)):
        reads.clear()
        cost["s"] = read_cost
        s = TreeSampler(os.getpid(), io.StringIO(), interval=0.5, now=clock)
        s._tree = {os.getpid()}
        for _ in range(120):  # 60 s of memory samples, twice a second
            s._memory(clock.t)
            clock.t += 0.5
        gaps = [b - a for a, b in zip(reads, reads[1:])]
        assert gaps and all(every - 1e-6 <= g <= every + 0.5 for g in gaps), (read_cost, gaps)
