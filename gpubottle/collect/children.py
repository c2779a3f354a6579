"""A process's direct children, read again only where a process may have been made since.

procfs.children reads one file per thread (/proc/PID/task/TID/children): 0.3 ms of CPU for a
script of 36 threads (benchmarks/many_threads.py), and the supervisor asked four times a second
(py-spy's watch for new DataLoader workers) and once more a second (the sampler's tree): ~1.5 ms
a second, the largest part of its own CPU on a saturated core after the first seconds, where a
training loop makes no process at all.

The kernel's last handed-out pid (/proc/loadavg's fifth field, in the reader's pid namespace)
moves whenever any process or thread is made: while it has not moved, no process can have a new
child, and the last answer stands. Ended children stay in it until the next read, as zombies do
in the kernel's own files: callers already meet pids whose reads fail. Whether the pid moves here
is tried first (`moves`: a thread started and joined must move it); a sandbox where it does not
(gVisor's loadavg says 0) reads every time, as does one where a read forced by FULL_EVERY_S finds a
child the unmoved pid said could not be new.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gpubottle.collect import procfs

FULL_EVERY_S = 10.0  # read the files anyway at least this often (a loadavg gone wrong since)


def moves(last_pid: Callable[[], int | None] = procfs.last_pid) -> bool:
    """Whether the kernel's last pid, as read here, moves when this process makes a thread."""
    before = last_pid()
    t = threading.Thread(target=lambda: None, name="gpubottle-pid-check")
    t.start()
    t.join()
    after = last_pid()
    return before is not None and after is not None and after != before


class ChildrenCache:
    """`of(pid)`: procfs.children(pid), read again only where the kernel made a process since the
    last read of it, or FULL_EVERY_S passed. One per thread that asks (not locked)."""

    def __init__(self, full_every_s: float = FULL_EVERY_S, now: Callable[[], float] = time.monotonic,
                 read: Callable[[int], set[int] | None] = procfs.children,
                 last_pid: Callable[[], int | None] = procfs.last_pid) -> None:
        self.full_every_s = full_every_s
        self._now = now
        self._read = read
        self._last_pid = last_pid
        self.trusted = moves(last_pid)  # the last pid moves with every fork here
        self._seen: dict[int, tuple[int, float, frozenset[int]]] = {}  # pid -> last pid, when, kids
        self.reads = 0  # the files read (for tests and the cost's measurement)

    def of(self, pid: int) -> set[int] | None:
        # The last pid first: a fork between the two reads leaves it behind, and the next call reads.
        last = self._last_pid() if self.trusted else None
        now = self._now()
        seen = self._seen.get(pid)
        same = last is not None and seen is not None and seen[0] == last
        if same and seen is not None and now - seen[1] < self.full_every_s:
            return set(seen[2])
        kids = self._read(pid)
        self.reads += 1
        if kids is None:
            self._seen.pop(pid, None)
            return None
        if same and seen is not None and not kids <= seen[2]:
            self.trusted = False  # a child the unmoved pid said could not be new
        if last is None:
            self.trusted = False
        else:
            self._seen[pid] = (last, now, frozenset(kids))
        return kids
