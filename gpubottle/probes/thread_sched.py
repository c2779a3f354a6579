"""The calling thread's CPU time and run-queue time, read around a DataLoader wait.

A loop that waits for batches either waits for the workers (blocked), takes the batch itself (on a
CPU), or waits for a core to do so (runnable, in the run queue). Only the last tells a main process
starved of CPU (its workers idle, their batches ready) from workers that are behind: both look the
same from the workers' side. Linux keeps both times per thread in /proc/thread-self/schedstat
(on-CPU and run-queue nanoseconds); one pread of a file kept open costs ~2 us, about what two
thread_time() calls cost. Elsewhere (or when the file cannot be read) the run-queue time is None and
the CPU time comes from time.thread_time().
"""

from __future__ import annotations

import os
import threading
import time

_SCHEDSTAT = "/proc/thread-self/schedstat"
_thread_time = time.thread_time
_get_ident = threading.get_ident


class ThreadSched:
    """`now()` -> (CPU seconds, run-queue seconds or None) of the calling thread."""

    def __init__(self, path: str = _SCHEDSTAT) -> None:
        self._path = path
        self._fds: dict[int, int] = {}  # thread ident -> its open schedstat file
        self._broken = not os.path.exists(path)
        if hasattr(os, "register_at_fork"):
            # A forked child's threads are not the parent's: their files name the parent's tasks.
            os.register_at_fork(after_in_child=self._forget)

    def now(self) -> tuple[float, float | None]:
        if self._broken:
            return _thread_time(), None
        ident = _get_ident()
        fd = self._fds.get(ident)
        try:
            if fd is None:
                fd = self._open(ident)
            raw = os.pread(fd, 96, 0)
        except OSError:
            # A thread ident reused after its thread ended names a task that is gone: open again.
            try:
                raw = os.pread(self._open(ident), 96, 0)
            except OSError:
                self._broken = True
                return _thread_time(), None
        try:
            cpu_ns, rq_ns = raw.split(None, 2)[:2]
            return int(cpu_ns) * 1e-9, int(rq_ns) * 1e-9
        except ValueError:
            self._broken = True
            return _thread_time(), None

    def since(self, start: tuple[float, float | None]) -> tuple[float, float | None]:
        """CPU and run-queue seconds of the calling thread since `start` (an earlier `now()`)."""
        cpu, rq = self.now()
        return cpu - start[0], (rq - start[1] if rq is not None and start[1] is not None else None)

    def _forget(self) -> None:
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()

    def _open(self, ident: int) -> int:
        old = self._fds.pop(ident, None)
        if old is not None:
            try:
                os.close(old)
            except OSError:
                pass
        fd = os.open(self._path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._fds[ident] = fd
        return fd
