"""The script's process forked from `gpubottle run` (launch/prestart.py's Forked): reaped and ended
as Popen does it for one it started, from a real child of this process (started with
posix_spawn, so no Popen holds it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from gpubottle.launch.prestart import Forked


def _child(code: str) -> Forked:
    return Forked(os.posix_spawn(sys.executable, [sys.executable, "-c", code], dict(os.environ)))


def test_exit_status_and_signals_as_popen_says():
    assert _child("import sys; sys.exit(3)").wait() == 3
    killed = _child("import time; time.sleep(30)")
    assert killed.poll() is None
    killed.kill()
    assert killed.wait() == -signal.SIGKILL and killed.returncode == -signal.SIGKILL
    killed.kill()  # already reaped: nothing to signal, no error


def test_wait_with_a_timeout_and_poll_while_another_thread_waits():
    child = _child("import time; time.sleep(0.6)")
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.1)
    assert 0.1 <= time.monotonic() - t0 < 0.5
    waiter = threading.Thread(target=child.wait)
    waiter.start()
    time.sleep(0.1)
    assert child.poll() is None  # the waiting thread holds it: poll neither blocks nor reaps
    waiter.join(timeout=10)
    assert child.returncode == 0 and child.poll() == 0 and child.wait(timeout=1) == 0


def test_a_child_reaped_elsewhere_reads_as_ended():
    child = _child("pass")
    os.waitpid(child.pid, 0)
    assert child.wait() == 0


def test_no_fork_while_another_thread_runs():
    """A thread of this process could hold a lock (the import lock, a logging handler's, malloc's
    own) as the fork copies it, and the child would wait on it for ever: then an interpreter is
    started instead."""
    from gpubottle.launch import prestart

    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not prestart._can_fork()
    finally:
        release.set()
        other.join()
