"""Event recording in the script's process: cheap appends, flushed to disk by a background thread.

Events are short JSON arrays, one per line, so a crash loses at most the last flush interval, and the
supervisor can tail the file for its live status. Times are time.monotonic() (CLOCK_MONOTONIC on Linux),
which the supervisor's sampler shares.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any


class EarlyStop(BaseException):
    """Raised at a step boundary when --steps or --duration is reached.

    A BaseException, like KeyboardInterrupt, so the script's own `except Exception` does not swallow it.
    """


class Recorder:
    def __init__(self, path: str, flush_interval: float = 0.5) -> None:
        self.path = path
        self._buf: list[Any] = []
        self._lock = threading.Lock()
        self._file = open(path, "a", buffering=1 << 16)  # noqa: SIM115 - closed in close()
        self._interval = flush_interval
        self._closed = False
        self._pid = os.getpid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpubottle-flush", daemon=True)
        self._thread.start()
        # Forked DataLoader workers inherit this object but not its thread: silence it there.
        os.register_at_fork(after_in_child=self._disable_in_child)

    def _disable_in_child(self) -> None:
        self._closed = True
        self._buf = []

    @property
    def active(self) -> bool:
        return not self._closed and os.getpid() == self._pid

    def emit(self, event: Any) -> None:
        if not self._closed:
            self._buf.append(event)  # list.append is atomic under the GIL

    def flush(self) -> None:
        with self._lock:
            if os.getpid() != self._pid:
                return
            buf, self._buf = self._buf, []
            if not buf:
                return
            try:
                self._file.write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in buf))
                self._file.flush()
            except (OSError, ValueError, TypeError):
                pass  # a full disk must not break the training run

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._stop.set()
        self.flush()
        self._closed = True
        try:
            self._file.close()
        except OSError:
            pass


class Stopper:
    """Counts steps from the best clock seen so far and stops the script at --steps or --duration."""

    def __init__(self, recorder: Recorder, steps: int | None, duration: float | None) -> None:
        self.recorder = recorder
        self.max_steps = steps
        self.deadline = (time.monotonic() + duration) if duration else None
        self._first_opt: int | None = None
        self.opt_steps = 0
        self.backwards = 0
        self.batches = 0
        self.optimizers_created = 0
        self.stopped = False

    def _check(self, count: int, reason_ok: bool) -> None:
        if self.stopped or not self.recorder.active:
            return
        reason = None
        if self.max_steps is not None and reason_ok and count >= self.max_steps:
            reason = "steps"
        elif self.deadline is not None and time.monotonic() >= self.deadline:
            reason = "duration"
        if reason:
            self.stopped = True
            self.recorder.emit(["stop", reason, time.monotonic()])
            raise EarlyStop(reason)

    def on_optimizer_created(self) -> None:
        self.optimizers_created += 1

    @property
    def clock_optimizer(self) -> int | None:
        """The optimizer whose steps count (the first one that stepped)."""
        return self._first_opt

    def on_optimizer_step(self, opt_id: int) -> None:
        self.note_optimizer(opt_id)
        if opt_id == self._first_opt:
            self.opt_steps += 1
            self._check(self.opt_steps, True)

    def note_optimizer(self, opt_id: int) -> None:
        if self._first_opt is None:
            self._first_opt = opt_id

    def on_backward(self) -> None:
        # With a torch.optim optimizer, its steps are the clock (gradient accumulation makes several
        # backward calls per step); backward calls count only in loops without one.
        self.backwards += 1
        self._check(self.backwards, self.optimizers_created == 0)

    def on_batch_start(self) -> None:
        # Called before fetching: N batches fetched before this one means N steps done.
        self._check(self.batches, self.optimizers_created == 0 and self.backwards == 0)
        self.batches += 1
