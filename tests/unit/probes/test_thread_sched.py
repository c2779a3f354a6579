"""The DataLoader hook's clock of the waiting thread: CPU and run-queue seconds from the thread's own
schedstat, per thread, with a clean fallback where the file cannot be read."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from gpubottle.probes.thread_sched import ThreadSched

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="schedstat is Linux's")


def _compute(cpu_s: float) -> None:
    """Use `cpu_s` of this thread's own CPU: a wall-clock spin gets less CPU on a loaded machine
    (CI once read 17 ms for a 50 ms spin) and the tests would measure the load, not the clock."""
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass


@linux
def test_cpu_grows_while_computing_and_not_while_sleeping() -> None:
    sched = ThreadSched()
    c0, q0 = sched.now()
    time.sleep(0.05)
    c1, q1 = sched.now()
    _compute(0.05)
    c2, q2 = sched.now()
    assert q0 is not None and q1 is not None and q2 is not None
    assert c1 - c0 < 0.02 < c2 - c1
    assert q2 >= q1 >= q0 >= 0.0


@linux
def test_each_thread_reads_its_own_times() -> None:
    sched = ThreadSched()
    main_before = sched.now()[0]
    got: list[float] = []

    def spin() -> None:
        c0 = sched.now()[0]
        _compute(0.05)
        got.append(sched.now()[0] - c0)

    for _ in range(2):  # the second thread may reuse the first's ident, whose task is gone
        t = threading.Thread(target=spin)
        t.start()
        t.join()
    assert len(got) == 2 and all(g > 0.02 for g in got)
    assert sched.now()[0] - main_before < 0.05  # the threads' CPU is not the main thread's


def test_without_schedstat_the_cpu_comes_from_thread_time(tmp_path) -> None:
    sched = ThreadSched(str(tmp_path / "absent"))
    cpu, rq = sched.now()
    assert rq is None and abs(cpu - time.thread_time()) < 0.01


def test_an_unreadable_file_falls_back_for_good(tmp_path) -> None:
    bad = tmp_path / "schedstat"
    bad.write_text("not numbers\n")
    sched = ThreadSched(str(bad))
    assert sched.now()[1] is None
    bad.write_text("1 2 3\n")
    assert sched.now()[1] is None  # broken once: no more reads inside the training loop


def test_since_an_earlier_reading(tmp_path) -> None:
    sched = ThreadSched()
    began = sched.now()
    _compute(0.03)
    cpu, rq = sched.since(began)
    assert cpu > 0.01 and (rq is None or rq >= 0.0)
    assert ThreadSched(str(tmp_path / "absent")).since((0.0, None))[1] is None


def test_short_fetches_are_read_one_in_every_few_by_count_long_ones_all() -> None:
    from gpubottle.probes.thread_sched import RECENT, SAMPLE_EVERY, SHORT_FETCH_S, FetchSampling

    s = FetchSampling()
    taken = []
    for _ in range(RECENT):  # until the first RECENT fetches are seen: every one
        taken.append(s.take())
        s.saw(SHORT_FETCH_S / 10)
    assert all(taken) and not s.every
    taken = []
    for i in range(RECENT * 4):
        taken.append(s.take())
        # a long fetch now and then (an epoch's first) changes neither this choice nor the rule
        s.saw(0.5 if i % 50 == 0 else SHORT_FETCH_S / 10)
    assert sum(taken) == RECENT * 4 // SAMPLE_EVERY and not s.every
    assert taken[SAMPLE_EVERY - 1] and not any(taken[:SAMPLE_EVERY - 1])  # by count, not by length
    for _ in range(RECENT):
        s.saw(SHORT_FETCH_S * 3)  # the fetches got long: every one is read again
    assert s.every and all(s.take() for _ in range(10))


def test_a_long_run_of_short_fetches_reads_fewer_of_them_after_its_first() -> None:
    """Read one in 8, the reads still cost a 0.33-ms step +3.7 to +5.2 us (hooks_in_place.py
    sched): after the first SAMPLE_LATER_AFTER short fetches, one in SAMPLE_EVERY_LATER."""
    from gpubottle.probes.thread_sched import (
        RECENT,
        SAMPLE_EVERY,
        SAMPLE_EVERY_LATER,
        SAMPLE_LATER_AFTER,
        SHORT_FETCH_S,
        FetchSampling,
    )

    s = FetchSampling()
    for _ in range(RECENT):
        s.take()
        s.saw(SHORT_FETCH_S / 10)
    taken = []
    for _ in range(SAMPLE_LATER_AFTER + 100 * SAMPLE_EVERY_LATER):
        taken.append(s.take())
        s.saw(SHORT_FETCH_S / 10)
    assert sum(taken[:SAMPLE_LATER_AFTER]) == SAMPLE_LATER_AFTER // SAMPLE_EVERY
    assert sum(taken[SAMPLE_LATER_AFTER:]) == 100
    assert SAMPLE_EVERY_LATER > SAMPLE_EVERY


def test_the_unread_fetches_take_the_mean_of_the_read_ones_beside_them() -> None:
    from gpubottle.collect.events import fill_unread
    from gpubottle.wire import Batch

    def b(cpu: float | None, rq: float | None = None, loader: int = 1, thread: int | None = None,
          ended: int = 0) -> Batch:
        return Batch(loader, 0.0, 0.0005, cpu, ended, rq, thread)

    first = [b(0.003, 0.0)] * 4  # read while every fetch was: the loader's first-time work
    sampled = ([b(None)] * 7 + [b(0.0004, 0.0001)] + [b(None)] * 7 + [b(0.0006, 0.0003)]
               + [b(None)] * 3)
    other = [b(None, loader=2),  # nothing of loader 2 was read: left alone
             b(None, thread=77),  # another thread's fetch of loader 1: nothing of its own read
             b(None, ended=1)]  # the fetch that ended the epoch: filled, never in the mean
    out = fill_unread(first + sampled + other)
    filled = [x for x, y in zip(out[4:4 + len(sampled)], sampled) if y.cpu is None]
    assert len(filled) == 17 and {(round(x.cpu, 6), round(x.rq, 6)) for x in filled} == {(0.0005, 0.0002)}
    assert out[:4] == first and out[-3:-1] == other[:2]
    assert round(out[-1].cpu, 6) == 0.0005
    total = sum(x.cpu for x in out[4:4 + len(sampled)])
    assert abs(total - len(sampled) * 0.0005) < 1e-12  # the sum stands for all of them
    lone = [b(0.001, 0.0), b(None)]  # no read one beside an unread in a sampled stretch: all read
    assert fill_unread(lone)[1].cpu == 0.001
    assert fill_unread(other[:1]) == other[:1]


@linux
def test_a_short_waits_cpu_is_counted_whole() -> None:
    """The CPU of waits of 0.2 ms, each after a sleep: schedstat's own CPU field, which moves for
    the running thread only at a tick or a switch, read ~22% of it; all of it now. (The spin reads
    a wall clock: thread_time() would bring schedstat up to date itself.)"""
    sched = ThreadSched()
    got = spent = own = 0.0
    # Turns with the spin and without it, alternated: a turn's reads and sleeps (~50 us here) are no
    # wait's CPU, and the turns without a spin measure them under the same load as the others
    # (measured as a whole loop before the spins' loop, beside the suite's four runs and two busy
    # programs the two loops' own costs differed enough to read the spins at 72%).
    for turn in range(600):
        spin_s = 0.0002 if turn % 2 else 0.0
        c0 = time.thread_time()
        start = sched.now()
        end = time.perf_counter() + spin_s
        while time.perf_counter() < end:
            pass
        read = sched.since(start)[0]
        time.sleep(0.0003)
        if spin_s:
            got, spent = got + read, spent + time.thread_time() - c0
        else:
            own += time.thread_time() - c0
    assert got >= 0.8 * (spent - own), (got, spent, own)
