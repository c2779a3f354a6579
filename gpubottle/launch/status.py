"""What the live status line says: steps/s, input-wait share, CPU and memory, from data already
collected (the probes' event file and the sampler's latest values). The tracker keeps counters and
the last few seconds only: a run of millions of steps must not grow gpubottle's memory."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from gpubottle.clock import StepClock
from gpubottle.probes.recorder import LATE_FLUSH_S
from gpubottle.wire import Backward, Batch, MemSample, OptimizerBuilt, OptimizerStep, Stop

WINDOW_S = 5.0
# The event file lags the script by up to its flush interval (2 s after the first 15): the window
# for the input-wait share ends at the newest record, not now (the last seconds would read as no
# wait), but no further back than this (a script stuck since has no wait to show).
LAG_MAX_S = LATE_FLUSH_S + 0.5


class StatusTracker:
    """An EventTail sink: the step clock (counters only) and the last few seconds of steps and waits."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.bad_lines = 0
        self.clock = StepClock()
        self._now = now
        self._recent_steps: deque[float] = deque()
        self._recent_batches: deque[tuple[float, float]] = deque()
        self._newest: float | None = None  # the newest time a record read so far holds

    def add(self, rec: Any) -> None:
        done_at: float | None = None
        if isinstance(rec, OptimizerStep):
            if self.clock.optimizer_step(rec.opt, rec.t):
                done_at = rec.t
        elif isinstance(rec, Backward):
            if self.clock.backward(rec.t0, rec.t1):
                done_at = rec.t1
        elif isinstance(rec, Batch):
            if self.clock.fetch(rec.t0):
                done_at = rec.t0
            self._recent_batches.append((rec.t0, rec.t1))
            self._newest = max(self._newest or rec.t1, rec.t1)
        elif isinstance(rec, OptimizerBuilt):
            self.clock.optimizer_created(rec.opt)
        elif isinstance(rec, Stop):
            self.clock.stop(rec.t)
        if done_at is not None:
            self._recent_steps.append(done_at)
            self._newest = max(self._newest or done_at, done_at)
        self._trim(self._now())

    def _trim(self, now: float) -> None:
        while self._recent_steps and self._recent_steps[0] < now - WINDOW_S:
            self._recent_steps.popleft()
        while self._recent_batches and self._recent_batches[0][1] < now - WINDOW_S:
            self._recent_batches.popleft()

    @property
    def steps(self) -> int:
        return self.clock.steps

    @property
    def batches(self) -> int:
        return self.clock.fetches

    def rate(self, now: float) -> float | None:
        self._trim(now)
        recent = self._recent_steps
        if len(recent) < 2 or recent[-1] <= recent[0]:
            return None
        return (len(recent) - 1) / (recent[-1] - recent[0])

    def wait_share(self, now: float) -> float | None:
        if not self.clock.fetches and not self._recent_batches:
            return None
        end = now if self._newest is None else max(now - LAG_MAX_S, min(now, self._newest))
        waited = sum(max(0.0, min(t1, end) - max(t0, end - WINDOW_S)) for t0, t1 in self._recent_batches)
        return min(1.0, waited / WINDOW_S)


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit in ("B", "KB") else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def status_line(tr: StatusTracker, latest: dict[str, Any], main_pid: int, started: float,
                now: float | None = None) -> str:
    now = time.monotonic() if now is None else now
    elapsed = now - started
    parts = [f"gpubottle {int(elapsed // 60):02d}:{int(elapsed % 60):02d}", f"step {tr.steps}"]
    rate = tr.rate(now)
    if rate is not None:
        parts.append(f"{rate:.1f} steps/s")
    wait = tr.wait_share(now)
    if wait is not None:
        parts.append(f"input wait {wait:.0%}")
    cpu = latest.get("cpu") or {}
    if cpu:
        main = cpu.get(str(main_pid), 0.0)
        others = sum(v for k, v in cpu.items() if k != str(main_pid))
        parts.append(f"CPU main {main:.0%} children {others:.0%}")
    mem = latest.get("mem")
    if isinstance(mem, MemSample):
        tree = sum(v[0] for v in mem.procs.values())
        parts.append(f"mem {_fmt_bytes(tree)}")
    return " | ".join(parts)
