"""Each step on the device's own clock, from the marks the device-clock probe recorded
(probes/device_clock.py): the step's device time, the device's idle time waiting for input, and how
far the device ran behind the host at the step's end.

- A step's device time runs from the device finishing the previous step's work to finishing its
  own: the pace the device kept, whatever the host's clock says when it runs ahead.
- Around each fetch, "a" completes when the work queued before the fetch has run and "b" when the
  work queued before the fetch returned has: the device sat idle, waiting for the batch, for b - a.
- The host time of device time 0 is read from the marks recorded while the device was idle (they
  complete as they are recorded): the largest host-minus-device time of any mark. A boundary's lag
  is then when it completed on the host's clock minus when the host recorded it: the work the host
  had queued ahead of the device.
- "p" marks are recorded where a phase outside the training step may begin (an iteration of a
  DataLoader, a save, model.eval()/train()): their lag is the training's work still queued when it
  began, which the phase's host span would otherwise be charged for (an evaluation pass that
  starts by waiting for the training's kernels; torch.save of CUDA tensors draining the backlog).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NEAR_S = 0.02  # a phase's "p" mark is recorded this close to the phase's own start


@dataclass
class DeviceSteps:
    """Per step, aligned with the step clock's intervals (index i is step i + 1); None where the
    device's clock did not see it."""

    durations_s: list[float | None] = field(default_factory=list)
    input_idle_s: list[float | None] = field(default_factory=list)
    lag_s: list[float | None] = field(default_factory=list)


def _rows(marks: list[list[Any]]) -> list[tuple[str, int, float, float]]:
    out = []
    for m in marks:
        try:
            out.append((str(m[0]), int(m[1]), float(m[2]), float(m[3])))
        except (IndexError, TypeError, ValueError):
            continue  # a mark from another version, or cut short
    return out


def device_steps(marks: list[list[Any]], n_steps: int) -> DeviceSteps | None:
    """None when the device's clock saw no step."""
    rows = _rows(marks)
    ends = {step: (d, t) for kind, step, d, t in rows if kind == "s"}
    if not ends or n_steps <= 0:
        return None
    offset = max(t - d for _k, _s, d, t in rows)
    idle: dict[int, float] = {}
    began: tuple[int, float] | None = None
    for kind, step, d, _t in rows:
        if kind == "a":
            began = (step, d)
        elif kind == "b" and began is not None and began[0] == step:
            idle[step] = idle.get(step, 0.0) + max(0.0, d - began[1])
            began = None
    fetched = bool(idle) or any(kind == "a" for kind, *_ in rows)
    out = DeviceSteps()
    for i in range(n_steps):
        k = i + 1
        end, prev = ends.get(k), ends.get(k - 1)
        out.durations_s.append(round(end[0] - prev[0], 7) if end and prev and end[0] >= prev[0] else None)
        out.input_idle_s.append(round(idle.get(k - 1, 0.0), 7) if fetched and end and prev else None)
        out.lag_s.append(round(max(0.0, end[0] + offset - end[1]), 7) if end else None)
    return out


def backlog(marks: list[list[Any]]) -> Callable[[float], float]:
    """The device's backlog at a phase's start (host time `t`): how long the work queued before it
    still ran, from the "p" mark recorded there; 0.0 where there is none (no CUDA, no mark)."""
    rows = _rows(marks)
    if not rows:
        return lambda t: 0.0
    offset = max(t - d for _k, _s, d, t in rows)
    phases = sorted((t, max(0.0, d + offset - t)) for kind, _s, d, t in rows if kind == "p")
    times = [t for t, _ in phases]

    def at(t: float) -> float:
        i = bisect.bisect_left(times, t - NEAR_S)
        near = [phases[j] for j in (i, i + 1) if j < len(phases) and abs(phases[j][0] - t) <= NEAR_S]
        return min(near, key=lambda p: abs(p[0] - t))[1] if near else 0.0

    return at
