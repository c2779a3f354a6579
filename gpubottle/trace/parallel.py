"""A large uncompressed trace read in parts, one process a part, on the machine's idle cores.

Decoding is the bulk of `report`'s time on a big trace, and the events array splits cleanly: each
part is a run of whole events, between two places where one event ends and the next begins
(`}` `,` `{`). A part is read as if it were a trace of its own (`{"traceEvents": [` + its events
+ `]}`) by the same reader, in a forked child; the parts' kept data are then joined in file order.
A cut is checked, not trusted: `}, {` inside a string or a nested list of objects would leave a part
that does not parse to its end, and then the file is read in one piece instead, as it would have
been. Compressed files are read in one piece (a gzip stream cannot be entered in the middle).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

from gpubottle.collect.system import core_budget
from gpubottle.trace.collect import EVENTS_DECODER, TraceData
from gpubottle.trace.reader import Batch, ReadResult, is_gzip, read_trace

# Below this a part's process costs more than it saves (forking, sending its data back).
PARALLEL_MIN_BYTES = 48 << 20
MAX_PARTS = 4
_PROBE = 1 << 20  # how far past a nominal cut to look for the end of an event
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BETWEEN = re.compile(rb"\}\s*,\s*\{")
_OPEN, _CLOSE = b'{"traceEvents": [', b"]}"


class _Region:
    """The bytes [start, end) of a file, with text before and after: what the reader reads."""

    def __init__(self, path: str, start: int, end: int | None, before: bytes, after: bytes) -> None:
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by __exit__, as the reader's file is
        self._fh.seek(start)
        self._left = None if end is None else end - start
        self._before, self._after = before, after

    def read(self, n: int) -> bytes:
        if self._before:
            out, self._before = self._before, b""
            return out
        if self._left is None or self._left > 0:
            want = n if self._left is None else min(n, self._left)
            data = self._fh.read(want)
            if self._left is not None:
                self._left -= len(data)
                if len(data) < want:
                    self._left = 0
            if data:
                return data
        out, self._after = self._after, b""
        return out

    def __enter__(self) -> _Region:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


def _cuts(path: str, size: int, parts: int) -> list[tuple[int, int]] | None:
    """(end of one part, start of the next) at about equal shares of the events array, or None."""
    with open(path, "rb") as fh:
        head = fh.read(_PROBE)
        m = _EVENTS_KEY.search(head)
        if m is None:  # the events come after a long header: not worth finding them
            return None
        first = m.end()
        out: list[tuple[int, int]] = []
        for k in range(1, parts):
            at = first + k * (size - first) // parts
            fh.seek(at)
            b = _BETWEEN.search(fh.read(_PROBE))
            if b is None:
                return None
            cut = (at + b.start() + 1, at + b.end() - 1)
            if out and cut[0] <= out[-1][1]:
                return None
            out.append(cut)
    return out


def _read_part(args: tuple[str, int, int | None, bool, bool],
               on_read: Callable[[int], None] | None = None) -> tuple[TraceData, ReadResult]:
    path, start, end, first, last = args
    data = TraceData()
    region = _Region(path, start, end, b"" if first else _OPEN, b"" if last else _CLOSE)
    read = read_trace(path, data.on_event, Batch(EVENTS_DECODER, data.on_batch), region=region,
                      on_read=on_read)
    return data, read


def _usable_parts() -> int:
    """The cores this process may use (its affinity and any cgroup quota), at most MAX_PARTS."""
    return min(MAX_PARTS, int(core_budget().available or 1))


def read_in_parts(path: str, on_read: Callable[[int], None] | None = None
                  ) -> tuple[TraceData, ReadResult] | None:
    """The file read in parts on several cores; None where it is better (or only possible) read in
    one piece: small, compressed, one core, no fork, or a cut that did not hold. `on_read`: told
    the file's bytes read so far, as estimated from the part this process reads."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    parts = min(_usable_parts(), size // PARALLEL_MIN_BYTES)
    # Linux only: forking a process with other threads running can deadlock the child, and on
    # macOS the system's own libraries make fork unsafe even without them.
    if (parts < 2 or is_gzip(path) or threading.active_count() > 1 or not sys.platform.startswith("linux")
            or "fork" not in multiprocessing.get_all_start_methods()):
        return None
    cuts = _cuts(path, size, parts)
    if cuts is None:
        return None
    starts = [0] + [b for _a, b in cuts]
    ends: list[int | None] = [a for a, _b in cuts] + [None]
    jobs = [(path, s, e, k == 0, k == parts - 1) for k, (s, e) in enumerate(zip(starts, ends))]
    try:
        # An executor, not a Pool: a part's process that dies (killed for memory) fails its result
        # here, where a Pool would wait for it forever.
        with ProcessPoolExecutor(parts - 1, mp_context=multiprocessing.get_context("fork")) as ex:
            later = [ex.submit(_read_part, job) for job in jobs[1:]]
            # The first part here, beside the others (all about as fast: its progress is theirs).
            results = [_read_part(jobs[0], None if on_read is None else lambda n: on_read(n * parts))]
            results += [f.result() for f in later]
    except Exception:  # noqa: BLE001 - any failure of a part: the file is read in one piece instead
        return None
    joined = _joined(path, results)
    if joined is not None:
        joined[1].bytes_read += sum(b - a for a, b in cuts)  # the separators between parts
    return joined


def _joined(path: str, results: list[tuple[TraceData, ReadResult]]) -> tuple[TraceData, ReadResult] | None:
    """The parts as one read, or None where a part shows its cut was not between two events: it
    did not parse to its end, or holds no event."""
    for k, (_d, r) in enumerate(results):
        last = k == len(results) - 1
        if (k and r.events == 0) or r.note or (r.truncated and not last):
            return None
    data, first = results[0]
    out = ReadResult(path=path, meta=dict(first.meta), bytes_total=first.bytes_total)
    for d, r in results:
        if d is not data:
            data.extend(d)
        out.meta.update({k: v for k, v in r.meta.items() if k not in out.meta})
        out.events += r.events
        out.skipped += r.skipped
        out.bytes_read += r.bytes_read
    out.bytes_read -= (len(results) - 1) * (len(_OPEN) + len(_CLOSE))  # the text added around parts
    out.truncated = results[-1][1].truncated
    return data, out
