"""The process-tree sampler's schedule on a fake clock (as pyinstrument's tests drive theirs): which
records each tick writes, and the tick rate over a run's life, without waiting in real time. The
readings are real: this process's /proc files."""

from __future__ import annotations

import io
import json
import os
from collections import Counter

import pytest

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
    assert s.interval_at(SLOW_AFTER_S) == 1.0  # 1 a second after the first 15 s
    fast = TreeSampler(os.getpid(), io.StringIO(), interval=2.0, now=FakeClock())
    assert fast.interval_at(SLOW_AFTER_S + 1) == 2.0  # never faster than asked


def _pss_reads(monkeypatch, clock: FakeClock, read_cost: float) -> list[tuple[int, float]]:
    """pss_uss_bytes faked to log (pid, when), each read costing `read_cost` of the thread's CPU."""
    from gpubottle.collect import process_tree, procfs

    reads: list[tuple[int, float]] = []
    thread_time = iter(range(10**6))
    monkeypatch.setattr(process_tree.time, "thread_time", lambda: next(thread_time) * read_cost)

    def pss(pid: int):
        reads.append((pid, clock.t))
        return (100 << 20, 50 << 20)

    monkeypatch.setattr(procfs, "pss_uss_bytes", pss)
    return reads


def _gaps(reads: list[tuple[int, float]], pid: int) -> list[float]:
    times = [t for p, t in reads if p == pid]
    return [b - a for a, b in zip(times, times[1:])]


def test_a_process_whose_pss_read_is_dear_is_read_less_often(monkeypatch):
    """smaps_rollup walks every mapping (about 7 ms of CPU a GB resident, under the lock the
    process's page faults take): a read that cost 40 ms is repeated every 20 s, not every 5 s."""
    from gpubottle.collect import process_tree

    me, parent = os.getpid(), os.getppid()  # a tree of two: the every-5-s cadence
    for read_cost, every in ((0.001, process_tree.PSS_EVERY_S), (0.040, 0.040 / process_tree.PSS_COST_SHARE)):
        clock = FakeClock()
        reads = _pss_reads(monkeypatch, clock, read_cost)
        s = TreeSampler(me, io.StringIO(), interval=0.5, now=clock)
        s._tree = {me, parent}
        for _ in range(120):  # 60 s of memory samples, twice a second
            s._memory(clock.t)
            clock.t += 0.5
        gaps = _gaps(reads, me)
        assert gaps and all(every - 1e-6 <= g <= every + 0.5 for g in gaps), (read_cost, gaps)


def test_a_lone_process_is_read_rarely_until_its_tree_grows(monkeypatch):
    """A process alone in its tree shares only libraries with the machine, so its PSS correction
    barely moves, and each read makes its allocations wait: read at once, then every 30 s; a
    worker forked beside it brings the 5-s cadence back (its pages are now shared with the worker)."""
    from gpubottle.collect import process_tree

    me, parent = os.getpid(), os.getppid()
    clock = FakeClock()
    reads = _pss_reads(monkeypatch, clock, 0.001)
    s = TreeSampler(me, io.StringIO(), interval=0.5, now=clock)
    s._tree = {me}
    start = clock.t
    for _ in range(80):  # 40 s alone
        s._memory(clock.t)
        clock.t += 0.5
    assert [t - start for _, t in reads] == [0.0, process_tree.PSS_LONE_EVERY_S]
    grown = clock.t
    s._tree = {me, parent}  # a process joins the tree (a DataLoader worker, here the parent)
    for _ in range(20):  # 10 s more
        s._memory(clock.t)
        clock.t += 0.5
    mine = [t - grown for p, t in reads if p == me and t >= grown]
    assert mine == [0.0, process_tree.PSS_EVERY_S]  # last read 10 s before: due at once, then every 5 s


def test_the_time_a_pss_read_holds_the_busy_script_is_counted(monkeypatch):
    """Around each smaps_rollup read of the script's own process, its main thread's schedstat: the
    read's wall time less what the thread ran or waited for a core is time it was held blocked,
    counted as far as it was busy the tick before; a worker's reads, or an idle script's, are not."""
    from gpubottle.collect import process_tree, procfs

    me, parent = os.getpid(), os.getppid()
    clock = FakeClock()
    _pss_reads(monkeypatch, clock, 0.001)
    wall = iter([0.0, 0.005] * 100)  # each read takes 5 ms of wall time
    monkeypatch.setattr(process_tree.time, "perf_counter", lambda: next(wall))
    stat = {"n": 0}

    def schedstat(pid: int):
        stat["n"] += 1  # before, after: the thread ran 1 ms and queued 1 ms of the 5
        return (0.0, 0.0) if stat["n"] % 2 else (0.001, 0.001)

    monkeypatch.setattr(procfs, "schedstat", schedstat)
    s = TreeSampler(me, io.StringIO(), interval=0.5, now=clock)
    s._tree = {me, parent}
    s._root_busy = 0.5
    s._memory(clock.t)  # both read once: only the script's counts
    assert s._stalled_s == pytest.approx(0.003 * 0.5)
    s._root_busy = 0.0  # waiting on its own (the GPU, a queue): its blocked time is its own
    clock.t += process_tree.PSS_EVERY_S
    s._memory(clock.t)
    assert s._stalled_s == pytest.approx(0.003 * 0.5)


def test_the_scripts_threads_cpu_every_two_seconds_those_that_ran():
    """ThreadsCpu: every thread at the first reading, then only those whose CPU moved (this
    process's main thread works between the ticks; a thread waiting on an event never runs)."""
    import threading

    idle = threading.Event()
    waiter = threading.Thread(target=idle.wait, daemon=True)
    waiter.start()
    clock = FakeClock()
    out = io.StringIO()
    sampler = TreeSampler(os.getpid(), out, interval=0.1, now=clock)
    sampler._tree = {os.getpid()}
    try:
        for _ in range(60):
            sampler._tick()
            sum(range(200_000))  # ~5 ms of this thread's CPU a tick
            clock.t += 0.1
    finally:
        idle.set()
    sampler._flush()
    rows = [json.loads(line) for line in out.getvalue().splitlines() if json.loads(line)[0] == "tc"]
    assert len(rows) == 3  # 6 s of ticks
    assert rows[0][2] == os.getpid() and str(waiter.native_id) in rows[0][3]
    assert all(str(os.getpid()) in r[3] and str(waiter.native_id) not in r[3] for r in rows[1:])
