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
