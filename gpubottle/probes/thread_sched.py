"""The calling thread's CPU time and run-queue time, read around a DataLoader wait.

A loop that waits for batches either waits for the workers (blocked), takes the batch itself (on a
CPU), or waits for a core to do so (runnable, in the run queue). Only the last tells a main process
starved of CPU (its workers idle, their batches ready) from workers that are behind: both look the
same from the workers' side. The CPU time is time.thread_time() (the kernel brings the running
thread's count up to date for it); the run-queue time is Linux's /proc/thread-self/schedstat
(its second field), where nothing else says it. Not schedstat's first field, the CPU: for the
running thread it moves only at a tick or a switch, so a short wait read there lost most of its CPU
(measured: 22% of it around 0.1-1 ms spins, 92% around 5 ms, 97% around 20 ms). Elsewhere (or when
the file cannot be read) the run-queue time is None.

In place, between a training loop's own work, a read of schedstat costs far more than in a warm
loop: two reads around each fetch were +22 to +28 us of a 0.5-0.7-ms step
(benchmarks/hooks_in_place.py sched, tiny_steps.py on one core), against 2.5 us warm. Where the
fetches are short (FetchSampling), one in SAMPLE_EVERY is read around, by count, whatever each one's
length: the others take the mean of the ones read as the run's events are read
(collect/events.fill_unread), so sums stand for all. (thread_time() around every fetch and schedstat
around one in 8 still cost +14 us a step there: both are read one in 8.) Read one in 8, the pair
still cost +3.7 to +5.2 us of a 0.33-ms step (hooks_in_place.py sched): after the first
SAMPLE_LATER_AFTER short fetches (32 of them read), one in SAMPLE_EVERY_LATER.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import deque

_SCHEDSTAT = "/proc/thread-self/schedstat"
SHORT_FETCH_S = 0.001  # a recent median fetch under this: read around one in SAMPLE_EVERY
SAMPLE_EVERY = 8
SAMPLE_LATER_AFTER = 256  # short fetches counted at one in SAMPLE_EVERY; then one in:
SAMPLE_EVERY_LATER = 32
RECENT = 32  # fetches the median is taken over (again after each RECENT fetches)
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
        """The CPU is read last, so that a wait's CPU (since) leaves the pread's own out."""
        rq = self._queue()
        return _thread_time(), rq

    def since(self, start: tuple[float, float | None]) -> tuple[float, float | None]:
        """CPU and run-queue seconds of the calling thread since `start` (an earlier `now()`); the
        run-queue time only where `start` read it. The CPU is read first (the pread's own left out)."""
        cpu = _thread_time() - start[0]
        rq = self._queue() if start[1] is not None else None
        return cpu, (rq - start[1] if rq is not None and start[1] is not None else None)

    def _queue(self) -> float | None:
        """The calling thread's run-queue seconds (schedstat's second field), None where unreadable."""
        if self._broken:
            return None
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
                return None
        try:
            return int(raw.split(None, 2)[1]) * 1e-9
        except (ValueError, IndexError):
            self._broken = True
            return None

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


class FetchSampling:
    """Which fetches get their thread's times read around them. Every one while the recent fetches
    are long (the reads are then a small part of each, and the split of a long wait matters); one in
    SAMPLE_EVERY (one in SAMPLE_EVERY_LATER after SAMPLE_LATER_AFTER of them: a short run keeps its
    reads, a long one pays for fewer), by count, while the median of the last RECENT fetches is
    under SHORT_FETCH_S. The choice never depends on the fetch it is made for (a count, and a
    median of earlier fetches that moves slowly), so the fetches read are a fair sample of all."""

    def __init__(self) -> None:
        self._recent: deque[float] = deque(maxlen=RECENT)
        self._seen = 0
        self._count = 0
        self.every = True  # read around every fetch (until the first RECENT say they are short)

    def take(self) -> bool:
        """Whether to read around the fetch about to start."""
        if self.every:
            return True
        self._count += 1
        every = SAMPLE_EVERY if self._count <= SAMPLE_LATER_AFTER else SAMPLE_EVERY_LATER
        return self._count % every == 0

    def saw(self, seconds: float) -> None:
        """A fetch took `seconds` (wall): every RECENT of them, the rule is set again."""
        self._recent.append(seconds)
        self._seen += 1
        if self._seen % RECENT == 0:
            self.every = statistics.median(self._recent) >= SHORT_FETCH_S
