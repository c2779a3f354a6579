"""gpubottle's periodic threads wake together (gpubottle/wakeups.py): the grid, the sampler's tick
hook that carries the supervisor's own periodic work, and the watcher hearing its process end."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

import pytest

from gpubottle.collect.process_tree import TreeSampler
from gpubottle.launch.watch import _on_exit
from gpubottle.wakeups import next_on_grid


def test_the_next_wake_is_the_next_instant_of_the_grid():
    assert next_on_grid(100.0, 1.0) == 101.0
    assert next_on_grid(100.4, 1.0) == 101.0
    assert next_on_grid(99.9995, 1.0) == 101.0  # woke a little early: that instant's, not again at once
    assert next_on_grid(100.8, 1.0) == 102.0  # too near the next instant to sleep for it
    assert next_on_grid(101.0, 2.0) == 102.0 and next_on_grid(102.0, 2.0) == 104.0
    assert next_on_grid(37.1, 0.25) == pytest.approx(37.25)


def test_the_samplers_ticks_carry_the_supervisors_work_and_it_fails_open():
    seen: list[tuple[float, str]] = []

    def on_tick(now: float) -> None:
        seen.append((now, threading.current_thread().name))
        if len(seen) == 2:
            raise RuntimeError("a watch that breaks")

    s = TreeSampler(os.getpid(), io.StringIO(), interval=0.05)
    s.on_tick = on_tick
    s.start()
    try:
        deadline = time.monotonic() + 10
        while len(seen) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        s.stop()
    assert len(seen) >= 4, seen  # the error did not stop the ticks
    assert {name for _, name in seen} == {"gpubottle-sampler"}
    assert any("a watch that breaks" in e for e in s.errors)
    gaps = [b - a for (a, _), (b, _) in zip(seen, seen[1:])]
    assert all(g > 0.01 for g in gaps), gaps  # never twice at one instant of the grid


def test_the_watcher_hears_its_process_end_without_polling():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    done = threading.Event()
    try:
        assert _on_exit(proc.pid, done)
        assert not done.is_set()
        assert done.wait(20)
    finally:
        proc.wait()
