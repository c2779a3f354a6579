"""One line of progress while `report` reads a large trace, on a terminal only.

A trace of a few GB takes a minute to read; without a sign of life a user cannot tell a slow read
from a hang. The line appears only once the read has taken SHOW_AFTER_S (small traces print
nothing), is redrawn at most every REDRAW_S, and is erased before the report is printed, so
stdout and a redirected stderr are never touched (report_command passes a stream only when
stderr is a terminal).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO

SHOW_AFTER_S = 1.0
REDRAW_S = 0.25
_MB = 1 << 20


class ReadProgress:
    def __init__(self, stream: IO[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self._name = ""
        self._total = 0
        self._began = 0.0
        self._drawn_at: float | None = None
        self._width = 0

    def start(self, name: str, total: int) -> None:
        """A read of a file of `total` bytes begins."""
        self._name, self._total = name, total
        self._began = self.clock()

    def advance(self, done: int) -> None:
        """`done` bytes of the file are in (where other processes read parts of it, as estimated
        from the part read here)."""
        now = self.clock()
        if now - self._began < SHOW_AFTER_S:
            return
        if self._drawn_at is not None and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now
        total = self._total
        read = min(total, done)
        share = f"{read / total:.0%} " if total else ""
        self._draw("reading ", f": {share}({read / _MB:.0f} of {total / _MB:.0f} MB)")

    def stage(self, text: str) -> None:
        """The next step after reading (shown only where the line is already up)."""
        if self._drawn_at is not None:
            self._draw("", f": {text}")

    def close(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
        self._drawn_at = None

    def _draw(self, before: str, after: str) -> None:
        """`before` + the file's name + `after` in 79 columns: a long name loses its start."""
        room = 79 - len(before) - len(after)
        name = self._name
        if len(name) > room:
            name = "..." + name[len(name) - max(0, room - 3):]
        text = (before + name + after)[:79]
        self.stream.write("\r" + text + " " * max(0, self._width - len(text)))
        self.stream.flush()
        self._width = max(self._width, len(text))
