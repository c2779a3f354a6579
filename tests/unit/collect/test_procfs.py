"""procfs readers against the real /proc of this process."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from gpubottle.collect import procfs

IMPORTED = time.monotonic()


def test_a_process_start_is_on_the_monotonic_clock_to_the_kernels_tick():
    started = procfs.process_start_mono()
    assert started is not None and started <= IMPORTED  # this process began before it read this file
    # psutil says about the same on the wall clock (its boot time is whole seconds).
    age = time.time() - psutil.Process(os.getpid()).create_time()
    assert time.monotonic() - started == pytest.approx(age, abs=1.05)
    assert procfs.process_start_mono(os.getpid()) == pytest.approx(started, abs=0.001)
    assert procfs.process_start_mono(2**22 + 7) is None  # no such process


def test_each_threads_cpu_is_read_by_its_native_id():
    """A thread that spins shows its own CPU under its native id (threading's native_id, the id
    py-spy names its samples by); one that sleeps shows next to none."""
    import threading

    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(500))

    busy = threading.Thread(target=spin, daemon=True)
    idle = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    idle.start()
    try:
        first = procfs.threads_cpu_seconds(os.getpid())
        assert first is not None
        # (until the spinning thread has 0.2 s of CPU: on a loaded machine that takes longer)
        deadline = time.monotonic() + 20.0
        while True:
            time.sleep(0.2)
            then = procfs.threads_cpu_seconds(os.getpid())
            assert then is not None
            if then.get(busy.native_id, 0.0) - first.get(busy.native_id, 0.0) >= 0.2:
                break
            assert time.monotonic() < deadline, then
    finally:
        stop.set()
    assert busy.native_id in then and idle.native_id in then and os.getpid() in then
    assert then[idle.native_id] - first.get(idle.native_id, 0.0) <= 0.05
    assert procfs.threads_cpu_seconds(2**22 + 7) is None


def test_a_processs_threads_cpu_to_the_nanosecond():
    """Each live thread's schedstat, summed: a process's CPU as its own clock says, where /proc's
    stat would say it in 10-ms ticks. Read on a one-thread child at rest after spinning (in this
    process, threads of the test runner's that ended between two reads left the sum)."""
    import subprocess
    import sys

    code = ("import time\nc=time.process_time()\nwhile time.process_time()-c<0.1: pass\n"
            "print(time.process_time(), flush=True)\ntime.sleep(10)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        own = float(child.stdout.readline())
        read = procfs.threads_cpu_precise(child.pid)
    finally:
        child.kill()
        child.wait()
    assert read is not None and abs(read - own) < 0.002  # (print's own work after its clock read)
    assert read * 100 % 1 != 0  # not whole ticks
    assert procfs.threads_cpu_precise(2**22 + 12345) is None  # no such process
