"""When to ask the script's process for a tensor census: its memory keeps climbing.

Two censuses at most: the first once the run's memory (PSS of the tree) has risen clearly above the
lowest level seen after start-up, the second once it has risen as much again, at least MIN_GAP_S
later. Memory that climbs once (a dataset loaded into RAM) never earns the second one.
"""

from __future__ import annotations

import os

STARTUP_S = 5.0  # imports and set-up: no baseline yet
MIN_GAP_S = 5.0
MIN_RISE_BYTES = 64 << 20
MIN_RISE_FRACTION = 0.05


class LeakWatch:
    def __init__(self, started: float) -> None:
        self.started = started
        self.low: int | None = None
        self.requested = 0
        self._level = 0
        self._at = 0.0

    def _rise(self, base: int) -> int:
        return max(MIN_RISE_BYTES, int(MIN_RISE_FRACTION * base))

    def observe(self, now: float, tree_bytes: int) -> int | None:
        """The census number to request now, or None."""
        if now - self.started < STARTUP_S or tree_bytes <= 0 or self.requested >= 2:
            return None
        if self.requested == 0:
            self.low = tree_bytes if self.low is None else min(self.low, tree_bytes)
            if tree_bytes >= self.low + self._rise(self.low):
                return self._request(now, tree_bytes)
            return None
        if now - self._at >= MIN_GAP_S and tree_bytes >= self._level + self._rise(self._level):
            return self._request(now, tree_bytes)
        return None

    def _request(self, now: float, level: int) -> int:
        self.requested += 1
        self._level, self._at = level, now
        return self.requested


def steps_marker(path: str) -> str:
    """The file the script's process creates at its first step boundary: the supervisor's memory
    watch takes no baseline before it (a GPU VM's start-up, 8-12 s of imports and CUDA's start,
    once read as memory climbing and cost every run a ~0.1-s census)."""
    return f"{path}.steps"


def request_census(path: str, n: int) -> None:
    """Ask the script's process for census number n (atomic replace, so no half-written file)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        fh.write(str(n))
    os.replace(tmp, path)
