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
