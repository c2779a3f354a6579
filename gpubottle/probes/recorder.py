"""Event recording in the script's process: cheap appends, flushed to disk by a background thread.

Records are the named tuples of gpubottle/wire.py, encoded one per line by the flush thread (not in
the training step), so a crash loses at most the last flush interval, and the supervisor can tail
the file for its live status. The hottest ones (a fetch, a backward call, an optimizer step) wait
packed as doubles (probes/hot_records.py): as tuples they kept objects alive among the script's own
and cost its other threads' allocations. Times are time.monotonic() (CLOCK_MONOTONIC on Linux),
which the supervisor's sampler shares; tests inject their own clock.
"""

from __future__ import annotations

import functools
import gc
import os
import threading
import time
from array import array
from collections.abc import Callable
from typing import Any

from gpubottle.clock import StepClock
from gpubottle.probes import hot_records
from gpubottle.probes.gc_phase import GcWatch
from gpubottle.wakeups import next_on_grid
from gpubottle.wire import Backward, Stop, encode_lines

Now = Callable[[], float]


STICKY_MAX = 256
# After a process's first LATE_AFTER_S the flush thread wakes every LATE_FLUSH_S (or the requested
# interval, if longer): each wakeup takes a core from a training thread (on a saturated machine it
# preempts one, and its partner in torch's thread pool then waits for it), and 0.5-s updates only
# serve the first seconds' live status. A process killed outright loses at most this much.
LATE_AFTER_S = 15.0
LATE_FLUSH_S = 2.0
HOOK_MAX_S = 0.0005  # no hot hook's own work takes this long; a preemption inside one does
# A collection the flush's allocations set off in its thread is the script's where the script runs
# collections of its own (one would have come a moment later in its thread); where it ran none for
# this long, it is gpubottle's: a loop that makes ~1 tracked object a step ran none after its
# imports under plain python, and the flush set off a full one of torch's objects (110 ms of CPU
# at 25-31 s of a 45-s memory loop, 2026-12-03).
SCRIPT_GC_RECENT_S = 10.0


class EarlyStop(BaseException):
    """Raised at a step boundary when --steps or --duration is reached.

    A BaseException, like KeyboardInterrupt, so the script's own `except Exception` does not swallow it.
    """


class Recorder:
    def __init__(self, path: str, flush_interval: float = 0.5, start_thread: bool = True,
                 now: Now = time.monotonic) -> None:
        self.path = path
        self._buf: list[Any] = []
        # The hottest records, packed (probes/hot_records.py): `hot(values)` appends one. Always the
        # same array (its bound `extend` is the hooks'); everything in it is newer than _buf's.
        self._hot = hot_records.packed()
        self.hot = self._hot.extend
        # Moving the packed records into _buf. Re-entrant: a signal handler of the script's that
        # saves a checkpoint (a record) may run inside emit() in the same thread.
        self._lock = threading.RLock()
        self._write_lock = threading.Lock()  # one flush at a time, in order
        self._file = open(path, "ab", buffering=1 << 16)  # noqa: SIM115 - closed in close()
        self._interval = flush_interval
        self._now = now
        self.gc_watch = GcWatch(now)
        gc.callbacks.append(self.gc_watch)
        self._began = now()
        self._closed = False
        # Whether the hot hooks record: a plain attribute (read at every fetch, backward and
        # optimizer step); also off while probes/unhooked.py measures what they cost in place.
        self.hot_on = True
        self.written = 0  # records written so far
        self.writer_cpu_s = 0.0  # CPU the writing took (mostly the flush thread's)
        self.hooks_s = 0.0  # the hot hooks' own time in the script's threads, as they timed it
        self.timed = 0  # the records those hooks emitted (the others are priced by emit_cost)
        self.installed = (0.0, 0.0)  # when the torch probes were installed (probes/install.py)
        self._pid = os.getpid()
        # What a later file must start with too (reopen): torch's set-up, the probes' status and
        # the DataLoaders already built, by key.
        self._sticky: dict[Any, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpubottle-flush", daemon=True)
        if start_thread:
            self._thread.start()
        # Forked DataLoader workers inherit this object but not its thread: silence it there.
        os.register_at_fork(after_in_child=self._disable_in_child)

    def _disable_in_child(self) -> None:
        self._closed = True
        self.hot_on = False
        self._buf = []
        del self._hot[:]

    @property
    def active(self) -> bool:
        # Forked workers are silenced by the fork hook; spawned ones never install the probes. So
        # no getpid() here: this is read on every hooked call, and getpid is a system call.
        return not self._closed

    @property
    def pending(self) -> int:
        chunks = [*self._buf, self._hot]
        return sum(hot_records.count(c) if isinstance(c, array) else 1 for c in chunks)

    def _take_hot(self, into: list[Any]) -> None:
        """The packed records so far, as one chunk at the end of `into` (under self._lock). No call
        between the copy and the delete: the interpreter switches threads (and runs a signal
        handler) only at calls and loops, so nothing packed between them is lost."""
        hot = self._hot
        if hot:
            chunk = hot[:]
            del hot[:]
            into.append(chunk)

    def emit(self, record: Any) -> None:
        if self._closed:
            return
        if self._hot:  # the packed records before it go first: the file keeps the events' order
            with self._lock:
                self._take_hot(self._buf)
                self._buf.append(record)
        else:
            self._buf.append(record)  # list.append is atomic under the GIL

    def timed_hook(self, seconds: float) -> None:
        """A hot hook's own time (its record, clock and /proc reads; not the script's call it wraps
        nor the step probes, timed apart), in place: caches cold after the script's work included
        (~7 us a hook on the 2-core machine, where the same code in a warm loop takes ~1). A call
        longer than HOOK_MAX_S was the thread preempted inside it, a wait the script would have had
        anyway: left out. From several threads an addition may be lost now and then."""
        if seconds < HOOK_MAX_S:
            self.hooks_s += seconds
        self.timed += 1

    def emit_sticky(self, key: Any, record: Any, now: bool = True) -> None:
        """Emit a record that describes the process rather than a moment (now=False: only keep it):
        a reopened file gets it again (at most STICKY_MAX, the newest)."""
        if now:
            self.emit(record)
        self._sticky.pop(key, None)
        self._sticky[key] = record
        if len(self._sticky) > STICKY_MAX:
            self._sticky.pop(next(iter(self._sticky)))

    def has_sticky(self, key: Any) -> bool:
        return key in self._sticky

    def flush(self) -> None:
        with self._write_lock:
            if os.getpid() != self._pid:
                return
            with self._lock:  # (the encoding and the write without it: emit() never waits on them)
                buf, self._buf = self._buf, []
                self._take_hot(buf)
            if not buf:
                return
            c0 = time.thread_time()
            # A collection the flush's allocations set off: the script's where it collects on its
            # own (a full one of a torch process's ~300,000 objects took 87 ms here, all of the
            # writer's CPU in that run), gpubottle's where it does not (SCRIPT_GC_RECENT_S).
            self.gc_watch.flushing, self.gc_watch.in_flush_cpu_s = threading.get_ident(), 0.0
            try:
                records: list[Any] = []
                for item in buf:
                    if isinstance(item, array):
                        records += hot_records.unpack(item)
                    else:
                        records.append(item)
                data = encode_lines(records)
                try:
                    self._file.write(data)
                    self._file.flush()
                except (OSError, ValueError):
                    pass  # a full disk must not break the training run
            finally:
                self.gc_watch.flushing = None
            self.written += len(records)
            watch = self.gc_watch
            own = self._now() - watch.last >= SCRIPT_GC_RECENT_S
            self.writer_cpu_s += max(0.0, time.thread_time() - c0 - (0.0 if own else watch.in_flush_cpu_s))

    def interval_at(self, age: float) -> float:
        """Seconds to the next flush, `age` seconds after the recorder began."""
        return self._interval if age < LATE_AFTER_S else max(self._interval, LATE_FLUSH_S)

    def _loop(self) -> None:
        stop = self._stop  # this thread's own: reopen() starts another with another
        while True:  # on the shared grid (gpubottle/wakeups.py): the supervisor's threads wake then
            now = self._now()
            if stop.wait(max(0.0, next_on_grid(now, self.interval_at(now - self._began)) - now)):
                return
            self.flush()

    def reopen(self, path: str, *first: Any) -> None:
        """Write to `path` from now on, starting with `first` and the sticky records (gpubottle.profile
        used again in the same process: the probes are installed once, each use has its own run
        directory)."""
        self.close()
        with self._write_lock, self._lock:
            self.path = path
            self._file = open(path, "ab", buffering=1 << 16)  # noqa: SIM115 - closed in close()
            self._buf = [*first, *self._sticky.values()]
            del self._hot[:]
            self.written = 0
            self.writer_cpu_s = 0.0
            self.hooks_s = 0.0
            self.timed = 0
            self._closed = False
            self.hot_on = True
            if self.gc_watch not in gc.callbacks:
                gc.callbacks.append(self.gc_watch)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._loop, name="gpubottle-flush", daemon=True)
            self._thread.start()

    def close(self) -> None:
        if self._closed:
            return
        self._stop.set()
        self.flush()
        self._closed = True
        if self.gc_watch in gc.callbacks:
            gc.callbacks.remove(self.gc_watch)
        self.hot_on = False
        try:
            self._file.close()
        except OSError:
            pass


def emit_cost(n: int = 2000) -> float:
    """Seconds a hook that does not time itself costs (a rarer record: a mode set, a save, an
    epoch's start): a wrapper's call around the script's function, two clock reads, a record
    appended, less the script's own call, measured here (a few milliseconds). The hot hooks (each
    fetch, backward, optimizer step) time themselves (Recorder.timed_hook): all records priced as a
    fetch's probe (two /proc reads) said ~93 us a step on an H200's launch-bound loop where ~30
    were measured."""
    sink: list[Any] = []

    def script() -> None:
        return None

    @functools.wraps(script)
    def hooked() -> None:
        t0 = time.monotonic()
        script()
        t1 = time.monotonic()
        sink.append(Backward(t0, t1))

    # The best of a few interleaved rounds of each: a preemption (a busy machine) only adds time,
    # and in the bare rounds it made the price 0 (a suite on two cores saw it).
    rounds, per = 5, max(1, n // 5)
    best = {True: float("inf"), False: float("inf")}
    for _ in range(rounds):
        for with_hook in (True, False):
            fn = hooked if with_hook else script
            t0 = time.perf_counter()
            for _ in range(per):
                fn()
            best[with_hook] = min(best[with_hook], time.perf_counter() - t0)
    return max(0.0, (best[True] - best[False]) / per)


STOP_MARGIN_STEPS = 3  # ranks in step with each other are within a step or two of each other


class Stopper:
    """Stops the script at --steps (counted by the step clock) or --duration (from launch).

    The ranks of a job must stop at the same step, or the ones left wait at the next collective
    forever. So with `agreed` (a file in the run directory) --duration works by steps: the first rank
    past its deadline names a step a few ahead in that file, and every rank stops when it gets there.
    """

    def __init__(self, recorder: Recorder, clock: StepClock, steps: int | None, duration: float | None,
                 now: Now = time.monotonic, agreed: str | None = None) -> None:
        self.recorder = recorder
        self.clock = clock
        self.max_steps = steps
        self._now = now
        self.deadline = (now() + duration) if duration else None
        self.stopped = False
        self.agreed = agreed
        self._stop_step: int | None = None
        # Whether check() can stop anything (--steps or --duration given): most runs give neither,
        # and the hot hooks then skip the call (a call, in place, costs a 0.65-ms step microseconds).
        self.armed = steps is not None or self.deadline is not None or agreed is not None

    def _agreed_step(self) -> int | None:
        """The step all ranks stop at: proposed once the deadline passed, else read when named."""
        if self._stop_step is not None or self.agreed is None:
            return self._stop_step
        if self.deadline is not None and self._now() >= self.deadline:
            try:
                fd = os.open(self.agreed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, str(self.clock.steps + STOP_MARGIN_STEPS).encode())
                os.close(fd)
            except OSError:
                pass  # another rank named it first
        elif not os.path.exists(self.agreed):  # a stat a step, until a rank names the step
            return None
        try:
            with open(self.agreed) as fh:
                self._stop_step = int(fh.read().strip() or "x")
        except (OSError, ValueError):
            return None
        return self._stop_step

    def check(self, completed: bool) -> None:
        """At every probe event; `completed` says whether a step of the clock just ended."""
        if self.stopped or not self.recorder.active:
            return
        reason = None
        if completed and self.max_steps is not None and self.clock.steps >= self.max_steps:
            reason = "steps"
        elif self.agreed is not None:
            if completed:
                target = self._agreed_step()
                if target is not None and self.clock.steps >= target:
                    reason = "duration"
        elif self.deadline is not None and self._now() >= self.deadline:
            reason = "duration"
        if reason:
            self.stopped = True
            self.recorder.emit(Stop(reason, self._now()))
            raise EarlyStop(reason)
