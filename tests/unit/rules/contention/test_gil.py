"""gil-contention from made-up evidence: a Python thread busy beside a loop kept from the lock, over
the steps or over start-up alone, and the shapes that are not it. The readings behind the evidence
(thread_cores, main_thread_shares) on made-up records."""

from __future__ import annotations

import dataclasses

import pytest
from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.gil import main_thread_shares, pooled, thread_cores
from gpubottle.analysis.stacks import Frame
from gpubottle.evidence import AccountEntry, BusyThread
from gpubottle.rules import diagnose
from gpubottle.rules.contention.gil import decide_gil, gil_contention
from gpubottle.wire import CpuSample, ThreadsCpu


def _monitor(cores: float = 0.97, busy: float = 1.0, startup: float | None = 0.72,
             started: str = "monitor") -> BusyThread:
    return BusyThread("Thread-1 (monitor)", cores, busy, 40, "monitor", "train.py:12", started, startup)


def _ev(thread: BusyThread | None, ran: float = 0.23, queued: float = 0.27, waiting: float = 0.0,
        wait_s: float = 0.0, num_workers: int = 0):
    ev = evidence(step_s=0.25, wait_s=wait_s, num_workers=num_workers, cores=2.0, main=1.0, tree=1.0)
    assert ev.cpu is not None
    ev.cpu.main_thread_cores, ev.cpu.main_run_queue, ev.cpu.main_waiting_samples = ran, queued, waiting
    ev.cpu.busy_threads = [thread] if thread is not None else []
    return ev


def test_a_thread_spinning_beside_a_loop_kept_from_the_lock_leads_with_its_line():
    ev = _ev(_monitor())
    [f] = gil_contention(ev)
    assert f.category == v.GIL_CONTENTION and f.severity == "critical" and f.share == pytest.approx(0.5)
    assert "Thread-1 (monitor)" in f.summary and "train.py:12" in f.summary
    assert f.fixes[0].where == "train.py:12" and "time.sleep()" in f.fixes[0].text
    assert "try it and time it" in f.fixes[0].text and f.fixes[0].expected is None  # no number promised
    assert any(x.name == "gil_startup_cores" for x in f.evidence)  # it ran in start-up too
    r = diagnose(ev)
    assert r.lead is not None and r.lead.category == v.GIL_CONTENTION
    assert r.primary != v.COMPUTE_BOUND  # its ops wait for the lock: not the model's own arithmetic


@pytest.mark.parametrize("thread, ran, queued, waiting", [
    (None, 0.23, 0.27, 0.0),  # no busy thread: something else keeps the loop (a GPU, I/O)
    (_monitor(cores=0.2), 0.23, 0.27, 0.0),  # a thread that works a little
    (_monitor(busy=0.3), 0.23, 0.27, 0.0),  # a thread mostly in waits (its CPU is in C)
    (_monitor(), 0.85, 0.05, 0.0),  # the loop's thread runs: it gets the lock when it needs it
    (_monitor(), 0.2, 0.05, 0.7),  # the loop waits on its DataLoader or a queue: the input rules' case
    (_monitor(started="_pin_memory_loop"), 0.23, 0.27, 0.0),  # torch's own pinning thread
])
def test_not_gil_contention(thread, ran, queued, waiting):
    assert decide_gil(_ev(thread, ran, queued, waiting)) is None


def test_a_thread_busy_only_in_start_up_costs_start_up():
    """It spins until the loop's data exists (`if history:` with no sleep): the imports wait, the
    steps do not; the finding is start-up's, with its share of the run."""
    ev = _ev(_monitor(cores=0.01, startup=0.75), ran=0.9, queued=0.02)
    assert ev.cpu is not None
    ev.cpu.startup_main_ran, ev.cpu.startup_main_queued = 0.26, 0.01
    ev.account = [AccountEntry("startup", 17.2, 0.82), AccountEntry("train", 2.7, 0.13),
                  AccountEntry("teardown", 1.0, 0.05)]
    d = decide_gil(ev)
    assert d is not None and d.startup_s == 17.2 and d.held == pytest.approx(0.73)
    [f] = gil_contention(ev)
    assert f.phase == "startup" and f.run_share == pytest.approx(0.73 * 17.2 / 20.9, abs=1e-3)
    assert f.severity == "critical" and "start-up waits" in f.summary
    ev.cpu.startup_main_ran = 0.9  # start-up's main thread ran: the thread cost it nothing
    assert decide_gil(ev) is None


def test_thread_cores_over_a_span_from_readings_of_the_threads_that_ran():
    # Readings every 2 s; tid 11 spins (1 s of CPU a second), 12 ran once, then stopped.
    rows = [ThreadsCpu(100.0, 7, {"7": 1.0, "11": 0.5, "12": 0.1}),
            ThreadsCpu(102.0, 7, {"7": 1.4, "11": 2.5, "12": 0.3}),
            ThreadsCpu(104.0, 7, {"7": 1.8, "11": 4.5}),
            ThreadsCpu(106.0, 7, {"11": 6.5, "13": 0.4}),  # 13 started after the span's first reading
            ThreadsCpu(106.0, 8, {"99": 50.0})]  # another process's
    got = thread_cores(rows, 7, (101.0, 107.0))
    assert got[11] == pytest.approx(1.0) and got[12] == pytest.approx(0.0) and got[13] == pytest.approx(0.1)
    assert got[7] == pytest.approx(0.1) and 99 not in got
    assert thread_cores(rows, 7, (101.0, 102.5)) == {}  # one reading: no rate


def test_the_main_threads_shares_of_a_span():
    rows = [CpuSample(t, {"7": 1.0}, None, None, {"7": 0.1}, {"7": 0.3}) for t in (1.0, 2.0, 3.0, 4.0)]
    assert main_thread_shares(rows, 7, (0.0, 3.5)) == pytest.approx((0.3, 0.1))
    assert main_thread_shares(rows, 7, (0.0, 1.5)) is None  # too few readings


def test_where_the_gpu_sets_the_pace_the_loops_idle_thread_waits_for_the_device():
    ev = _ev(_monitor())
    n = len(ev.steps.durations_s)
    # The device's clock: 0.24-s steps the GPU paces, the host 0.2 s ahead of it.
    ev.steps.device_s, ev.steps.device_lag_s = [0.24] * n, [0.2] * n
    ev.steps.device_input_idle_s = [0.0] * n
    assert decide_gil(ev) is None


def test_a_thread_that_waits_for_its_work_part_of_the_time_is_told_to_move_it_first():
    """A consumer computing metrics off a queue (busy 70% of its samples, waiting for the loop's
    outputs the rest) has work, not a poll: a process (or less of it) comes first."""
    [f] = gil_contention(_ev(_monitor(busy=0.7)))
    assert "belongs in a process" in f.fixes[0].text and f.fixes[0].where == "train.py:12"
    assert "wait between its checks" in f.fixes[1].text and "70% of the time" in f.summary
    [g] = gil_contention(_ev(_monitor(busy=1.0)))
    assert "without pause" in g.summary
    assert "wait between its checks" in g.fixes[0].text


def test_a_pool_of_threads_started_with_one_function_is_named_as_one():
    """Sixteen batch-making threads of 0.03 of a core each: together they hold the lock as one
    thread of 0.5 would; the finding counts them and names the function they were started with."""
    pool = BusyThread("Thread-1 (prepare)", 0.52, 0.7, 480, "prepare", "train.py:30", "prepare", None, 16)
    [f] = gil_contention(_ev(pool, ran=0.4, queued=0.2))
    assert "16 threads started with prepare run Python beside it" in f.summary, f.summary
    assert "used 0.52 of a core together" in f.evidence[0].text and "of their 480" in f.evidence[0].text
    assert f.fixes[0].where == "train.py:30" and "belongs in a process" in f.fixes[0].text  # (they wait too)
    assert decide_gil(_ev(dataclasses.replace(pool, cores=0.2), ran=0.4, queued=0.2)) is None


def test_threads_started_with_one_function_are_pooled_and_others_stay_apart():
    """Sixteen `prepare` threads under MIN_CORES each are one entry with their CPU summed and
    samples pooled; a monitor thread stays its own; a lone thread under MIN_CORES is left out."""
    boot = [Frame("_bootstrap", "/usr/lib/python3.11/threading.py", 1002),
            Frame("run", "/usr/lib/python3.11/threading.py", 982)]
    work = [*boot, Frame("prepare", "/w/train.py", 28), Frame("<listcomp>", "/w/train.py", 30)]
    wait = [*boot, Frame("prepare", "/w/train.py", 28), Frame("put", "/usr/lib/python3.11/queue.py", 140),
            Frame("wait", "/usr/lib/python3.11/threading.py", 331)]
    spin = [*boot, Frame("monitor", "/w/train.py", 12)]
    threads = {100 + i: (f"Thread-{i + 2} (prepare)", [work, work, wait]) for i in range(16)}
    threads[50] = ("Thread-1 (monitor)", [spin] * 10)
    threads[60] = ("Thread-18 (idle)", [[*boot, Frame("idle", "/w/other.py", 3)]] * 4)
    cores = {100 + i: 0.03 for i in range(16)} | {50: 0.4, 60: 0.01}
    got = pooled(threads, cores, {})
    assert [(b.count, b.started) for b in got] == [(16, "prepare"), (1, "monitor")]
    pool = got[0]
    assert pool.cores == pytest.approx(0.48) and pool.samples == 48
    assert pool.busy_share == pytest.approx(2 / 3, abs=1e-3) and pool.site is not None
    assert pool.name == "Thread-2 (prepare)" and pool.startup_cores is None
