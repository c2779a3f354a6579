"""The device's own clock: CUDA events on the current stream, resolved without synchronising.

A CUDA device runs behind the host: the host queues kernels and goes on until something makes it
wait (`.item()`, a pageable copy, a full launch queue). Host times then say when work was queued,
not when it ran: a step whose `.item()` drains the backlog looks long, the steps before it short,
and a wait for data the GPU spent still busy looks like starvation. So at each step boundary, and
just before and after each DataLoader fetch, an event is recorded on the current stream: it
completes when the work queued before it has run. Events are queried at later step boundaries
(`query()` never waits) and their times read against the first one; the last ones at the script's
end, with one more mark recorded once the device has run everything: it completes as it is
recorded.

What it costs is a record, a query and a read a mark: a few microseconds on most machines, but 45
us a record and ~75 a step on the H200 machine's Firecracker VM (2.5-ms launch-bound steps: 3%).
So it keeps to a budget, measured as it runs: its own time may take BUDGET of the time since its
first mark (after GRACE_S, so the first steps are all seen); past it, the next steps go unseen
until it is back under, and each step it does see is seen whole (both its ends and its fetches),
so what is timed is a sample of whole steps. Time it spends while the host runs ahead of the device
(the last resolved step end still queued HOST_AHEAD_S or more) is not counted: it slows nothing.

From the marks the analysis takes each step's device time (boundary to boundary) and the device's
idle time waiting for input: from when the work queued before a fetch had run ("a") to when the
fetch returned and new work could follow ("b"). Fails open: any error turns it off and says so.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from gpubottle.options import ChildConfig
from gpubottle.probes.hooks import CUDA_RECHECK_S, Wake, wake_in
from gpubottle.probes.recorder import Recorder
from gpubottle.wire import DeviceMarks, ProbeFailed

FLUSH_EVERY = 256  # resolved marks per record
MAX_PENDING = 4096  # unresolved events kept; past it the oldest are given up (a stalled device)
BUDGET = 0.003  # of the time since the first mark, what its own calls may take
GRACE_S = 0.02  # its own time before the budget binds
HOST_AHEAD_S = 0.001  # a step end this far behind the host on the device: the host is ahead


class DeviceClock:
    """A step probe (probes/hooks.py) that also hears each DataLoader fetch (`fetch`), from the
    first step boundary at which the script uses CUDA on (`listen`: StepHooks.listen, called then;
    the fetches of the first CUDA step, warm-up, go unmarked)."""

    fetching = False

    def __init__(self, recorder: Recorder, listen: Callable[[Any], None] | None = None) -> None:
        self.recorder = recorder
        self._listen = listen
        self._start()

    def reset(self, cfg: ChildConfig) -> None:
        self._start()

    def _start(self) -> None:
        self.on = True
        self.steps = 0
        self.seen = 0  # steps it timed (both ends marked)
        self.skipped = 0  # steps left unseen to keep to its budget
        self.spent_s = 0.0  # its own time, counted against the budget
        self._t0: float | None = None  # perf_counter at its first mark
        self._observe = True  # the running step is seen: its fetches and its end are marked
        self._offset: float | None = None  # host time of device time 0, from the resolved marks
        self._ahead = False  # the last resolved step end: the host was ahead of the device
        self._base: Any = None  # the first event: device times are read against it
        self._cudamod: Any = None  # torch.cuda, once the script has a context
        self._pending: deque[tuple[str, int, float, Any]] = deque()
        self._free: list[Any] = []  # resolved events, recorded again instead of creating new ones
        self._done: list[list[Any]] = []

    def _cuda(self) -> Any:
        """torch.cuda while the script uses CUDA, else None (nothing to time). Kept once found:
        a context, once made, stays, so no mark asks again."""
        if self._cudamod is not None:
            return self._cudamod
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                self._cudamod = torch.cuda
        except Exception:
            pass
        return self._cudamod

    def _mark(self, kind: str, step: int) -> None:
        if not self.on:
            return
        cuda = self._cuda()
        if cuda is None:
            return
        try:
            if cuda.is_current_stream_capturing():
                return  # a CUDA graph being captured would take the event in as one of its nodes
            ev = self._free.pop() if self._free else cuda.Event(enable_timing=True)
            ev.record()
            t = round(time.monotonic(), 6)
            if self._base is None:
                self._base, self._offset = ev, t
                self._done.append([kind, step, 0.0, t])
                return
            self._pending.append((kind, step, t, ev))
            if len(self._pending) > MAX_PENDING:
                self._pending.popleft()
        except Exception as exc:
            self._fail(exc)

    def _live(self) -> bool:
        """Marking: on, and the script uses CUDA."""
        return self.on and self._cuda() is not None

    def fetch(self, began: bool) -> None:
        """Just before (`began`) and just after a DataLoader fetch, in the script's thread."""
        if self._observe and self._live():
            t0 = time.perf_counter()
            self._mark("a" if began else "b", self.steps)
            self._charge(t0)

    def phase(self) -> None:
        """Where a phase outside the training step may begin (a DataLoader's iteration, a save,
        model.eval()/train()): its lag says how much of the training's work was still queued."""
        t0 = time.perf_counter()
        if self._live() and self._within(t0):
            self._mark("p", self.steps)
            self._charge(t0)

    def on_step(self, step: int) -> Wake | None:
        """A step's end: marked when the step was seen, or when the next one will be (its start).
        Before the script uses CUDA, asked again twice a second, not every step."""
        self.steps = step
        if not self._live():
            return wake_in(CUDA_RECHECK_S)
        if self._listen is not None:
            self._listen(self)
            self._listen = None
        t0 = time.perf_counter()
        marked = self._observe
        if marked:
            self.seen += 1
            self._mark("s", step)
        self._observe = self._within(t0)
        if self._observe and not marked:
            marked = True
            self._mark("s", step)
        elif not self._observe:
            self.skipped += 1
        if marked:
            self._resolve(wait=False)
            self._charge(t0)
        return None

    def _within(self, now: float) -> bool:
        if self._t0 is None:
            self._t0 = now
        return self.spent_s <= GRACE_S + BUDGET * (now - self._t0)

    def _charge(self, t0: float) -> None:
        if not self._ahead:
            self.spent_s += time.perf_counter() - t0

    def _resolve(self, wait: bool) -> None:
        """Read the times of the events that have completed, oldest first; with `wait` (the script
        has ended) the last one is waited for, which completes every one before it."""
        if not self.on or self._base is None:
            return
        try:
            if wait and self._pending:
                self._pending[-1][3].synchronize()
            while self._pending and self._pending[0][3].query():
                kind, step, t, ev = self._pending.popleft()
                d = round(self._base.elapsed_time(ev) / 1000.0, 7)
                self._done.append([kind, step, d, t])
                self._free.append(ev)
                self._offset = t - d if self._offset is None else max(self._offset, t - d)
                if kind == "s":  # how far behind the host the device was when this step ended
                    self._ahead = d + self._offset - t >= HOST_AHEAD_S
            if len(self._done) >= FLUSH_EVERY or (wait and self._done):
                self.recorder.emit(DeviceMarks(self._done, self.seen, self.skipped, round(self.spent_s, 6)))
                self._done = []
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self.on = False
        self._pending.clear()
        self.recorder.emit(ProbeFailed("device-clock", f"the device's clock stopped: {exc!r}"[:300]))

    def finish(self, exc: BaseException | None) -> None:
        """The last marks, and an anchor ("z"): recorded once the device has run everything, it
        completes as it is recorded, which ties the device's clock to the host's (a loop that
        always keeps the device busy has no other such mark)."""
        if exc is not None and "CUDA error" in str(exc):
            return  # the context is broken: waiting on it would raise again (or hang)
        self._resolve(wait=True)
        if self.on and self._base is not None:
            self._mark("z", self.steps)
            self._resolve(wait=True)
