"""collect/children.py: a process's children read again only where the kernel made a process since,
against the real /proc, and its refusals where the kernel's last pid does not move."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from gpubottle.collect import procfs
from gpubottle.collect.children import ChildrenCache, moves


def test_the_last_pid_moves_with_a_thread_made_here():
    assert moves()
    assert not moves(lambda: None) and not moves(lambda: 7)  # a loadavg that says nothing, or 0


def test_children_are_read_again_only_after_a_process_was_made():
    """Asked again and again with nothing made since, the files are read once; a child started
    between two asks is seen at the next one (its fork moved the last pid)."""
    cache = ChildrenCache()
    me = os.getpid()
    first = cache.of(me)
    assert first == procfs.children(me) and cache.reads == 1
    for _ in range(5):
        assert cache.of(me) == first
    if procfs.last_pid() == procfs.last_pid():  # (nothing else on the machine made a process)
        assert cache.reads <= 2
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in (cache.of(me) or set())
    finally:
        child.kill()
        child.wait()
    assert cache.trusted


def test_a_last_pid_that_does_not_move_reads_every_time():
    """A sandbox whose loadavg says 0 (no pid) is never trusted; one whose pid stays put while a
    child appears is caught at the read FULL_EVERY_S forces, and reads every time from then on."""
    kids = [{1}]
    now = [0.0]
    pids = iter(range(100, 1000))
    moving = [True]  # the pid moves for the trust check at the start, then stays put
    still = ChildrenCache(read=lambda pid: kids[0], last_pid=lambda: None)
    still.of(5), still.of(5)
    assert not still.trusted and still.reads == 2
    frozen = ChildrenCache(read=lambda pid: kids[0], now=lambda: now[0], full_every_s=10.0,
                           last_pid=lambda: next(pids) if moving[0] else 500)
    assert frozen.trusted  # (its check ran while the pid still moved)
    moving[0] = False
    assert frozen.of(5) == {1} and frozen.of(5) == {1} and frozen.reads == 1
    kids[0] = {1, 2}  # a child the unmoved pid does not show
    assert frozen.of(5) == {1}  # not seen yet...
    now[0] = 11.0
    assert frozen.of(5) == {1, 2} and not frozen.trusted  # ...until the forced read, then never again
    frozen.of(5)
    assert frozen.reads == 3


def test_a_gone_process_has_no_children():
    cache = ChildrenCache()
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    time.sleep(0.01)
    assert cache.of(p.pid) is None
