"""One streaming reader of Kineto/Chrome trace files (.json, .json.gz).

The file is never loaded whole: the `traceEvents` array is decoded one event at a time with the C
JSON scanner over a sliding buffer, and each event is handed to a consumer that keeps only what its
analyses need. Other top-level keys (deviceProperties, distributedInfo, ...) are small and kept. A file
cut short (a profiler killed mid-write, a truncated gzip) yields every complete event and says so.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple, Protocol

from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError

_CHUNK = 1 << 22  # 4 MiB of text at a time
_WS = " \t\r\n"
_SEPARATORS = re.compile(r"[ \t\r\n,]*")


@dataclass
class ReadResult:
    path: str
    meta: dict[str, Any] = field(default_factory=dict)  # top-level keys other than traceEvents
    events: int = 0
    skipped: int = 0  # entries of traceEvents that are not objects
    truncated: bool = False
    bytes_read: int = 0
    bytes_total: int | None = None
    note: str | None = None


class ByteSource(Protocol):
    """What the reader reads from: an open file, or a part of one (trace/parallel.py)."""

    def read(self, n: int, /) -> bytes: ...

    def __enter__(self) -> ByteSource: ...

    def __exit__(self, *exc: Any) -> Any: ...


class _Stream:
    """Text with a movable window: `buf[pos:]` is unread; refill() appends the next chunk."""

    def __init__(self, fh: ByteSource, compressed: bool,
                 on_read: Callable[[int], None] | None = None) -> None:
        self.fh = fh
        self.on_read = on_read  # told the bytes read so far, after each read (progress)
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.broken: str | None = None  # why reading stopped early (corrupt/truncated compression)
        self.raw_read = 0
        self._decoder = zlib.decompressobj(wbits=47) if compressed else None
        self._tail = b""
        self._pending = b""  # compressed input not yet inflated

    def refill(self) -> bool:
        if self.eof:
            return False
        data = self._inflate() if self._decoder is not None else self._read()
        if not data:
            return False
        data = self._tail + data
        # Keep an incomplete UTF-8 sequence for the next chunk.
        cut = len(data)
        for back in range(1, min(4, len(data)) + 1):
            b = data[-back]
            if b & 0xC0 == 0x80:
                continue
            if b >= 0xC0:
                need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
                if need > back:
                    cut = len(data) - back
            break
        self._tail = data[cut:]
        self.buf = self.buf[self.pos :] + data[:cut].decode("utf-8", "replace")
        self.pos = 0
        return True

    def _read(self) -> bytes:
        try:
            data = self.fh.read(_CHUNK)
        except OSError as exc:
            self.broken, self.eof = str(exc), True
            return b""
        self.raw_read += len(data)
        if self.on_read is not None:
            self.on_read(self.raw_read)
        if not data:
            self.eof = True
        return data

    def _inflate(self) -> bytes:
        """At most _CHUNK bytes of decompressed text: a 30x-compressible trace must not expand a
        whole compressed chunk at once."""
        dec = self._decoder
        assert dec is not None
        while True:
            if not self._pending:
                self._pending = self._read()
                if not self._pending:
                    if not dec.eof:
                        self.broken = "the compressed stream ends early (truncated .gz)"
                    return b""
            try:
                out = dec.decompress(self._pending, _CHUNK)
            except zlib.error as exc:
                self.broken, self.eof = f"corrupt gzip data ({exc})", True
                return b""
            self._pending = dec.unconsumed_tail
            if dec.eof:  # concatenated gzip members: go on with the next one
                self._pending = dec.unused_data + self._pending
                dec = self._decoder = zlib.decompressobj(wbits=47)
                if not self._pending:
                    self._pending = self._read()
                    if not self._pending:
                        self.eof = True
                        return out
            if out:
                return out

    def drain(self) -> None:
        """Inflate the rest, discarding it, to learn whether the compressed data is intact: bad
        JSON inside a .gz is corrupt compression more often than a bad exporter."""
        while self._decoder is not None and not self.eof and self._inflate():
            pass

    def skip_ws(self) -> bool:
        """Advance past whitespace; False at the end of input."""
        while True:
            n = len(self.buf)
            while self.pos < n and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < n:
                return True
            if not self.refill():
                return False

    def peek(self) -> str | None:
        return self.buf[self.pos] if self.skip_ws() else None

    def expect(self, ch: str) -> bool:
        if self.peek() == ch:
            self.pos += 1
            return True
        return False

    def value(self, decoder: json.JSONDecoder) -> tuple[bool, Any]:
        """Decode one JSON value; (False, None) when the input ends inside it."""
        self.skip_ws()
        while True:
            try:
                obj, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # A value cut by the buffer's end fails there (or as an unterminated string); a
                # failure anywhere else is corrupt JSON, which must not make us buffer the rest.
                if exc.pos >= len(self.buf) - 1 or exc.msg.startswith("Unterminated"):
                    if self.refill():
                        continue
                    return False, None
                raise
            # A number at the buffer's end may continue in the next chunk.
            if end >= len(self.buf) and not self.eof and self.refill():
                continue
            self.pos = end
            return True, obj


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise GpubottleError(f"cannot read {path}: {exc.strerror}", EXIT_BAD_INPUT) from exc


def read_trace(path: str, on_event: Callable[[dict[str, Any]], None], batch: Batch | None = None,
               region: ByteSource | None = None, on_read: Callable[[int], None] | None = None
               ) -> ReadResult:
    """Stream the trace at `path`, calling `on_event` for each event dict in traceEvents; with
    `batch`, runs of well-formed events are decoded by it in one call each instead. `region`: read
    this uncompressed text instead of the file (a part of it, trace/parallel.py). `on_read`: told
    the bytes read so far as the read goes (progress)."""
    res = ReadResult(path=path)
    try:
        res.bytes_total = os.path.getsize(path)
    except OSError:
        pass
    if res.bytes_total == 0:
        raise GpubottleError(f"{path} is empty", EXIT_BAD_INPUT)
    decoder = json.JSONDecoder()
    with region or _open(path) as fh:
        st = _Stream(fh, region is None and is_gzip(path), on_read)
        first = st.peek()
        if first is None:
            if st.broken:
                raise GpubottleError(f"{path}: {st.broken}", EXIT_BAD_INPUT)
            raise GpubottleError(f"{path} is empty", EXIT_BAD_INPUT)
        if first != "{":
            raise GpubottleError(f"{path} is not a trace (not a JSON object)", EXIT_BAD_INPUT)
        st.pos += 1
        seen_events = False
        try:
            while True:
                ch = st.peek()
                if ch == "}" or ch is None:
                    res.truncated = ch is None
                    break
                if ch == ",":
                    st.pos += 1
                    continue
                ok, key = st.value(decoder)
                if not ok or not st.expect(":"):
                    res.truncated = True
                    break
                if key == "traceEvents":
                    seen_events = True
                    if not _events(st, decoder, on_event, res, batch):
                        res.truncated = True
                        break
                else:
                    ok, val = st.value(decoder)
                    if not ok:
                        res.truncated = True
                        break
                    res.meta[str(key)] = val
        except json.JSONDecodeError as exc:
            st.drain()  # corrupt compression is reported as such, below
            corrupt = bool(st.broken and st.broken.startswith("corrupt"))
            if not corrupt and not seen_events and res.events == 0:
                raise GpubottleError(f"{path} is not valid JSON ({exc.msg})", EXIT_BAD_INPUT) from exc
            res.truncated = True
            res.note = f"invalid JSON after {res.events} events ({exc.msg}); analysed what came before"
        res.bytes_read = st.raw_read
        # A truncated file is analysed as far as it goes; corrupt compressed data is an error.
        if st.broken and (st.broken.startswith("corrupt") or (res.events == 0 and not seen_events)):
            raise GpubottleError(
                f"{path}: {st.broken}, after {res.events} events", EXIT_BAD_INPUT,
                hint="re-export the trace, or decompress what is readable with zcat",
            )
        if st.broken:
            res.truncated = True
            res.note = res.note or st.broken
    if not seen_events:
        raise GpubottleError(
            f"{path} is JSON but neither a profiler trace (no traceEvents) nor a gpubottle report",
            EXIT_BAD_INPUT,
        )
    return res


class Batch(NamedTuple):
    """The fast path: a msgspec decoder for a list of typed events, and where the lists go."""

    decoder: Any  # msgspec.json.Decoder[list[...]]
    on_events: Callable[[list[Any]], None]


_BOUNDARY = re.compile(r"[ \t\r\n]*(?:,[ \t\r\n]*\{|\])")
_BOUNDARY_TRIES = 64


def _last_boundary(buf: str, pos: int) -> int:
    """Just past the last `}` in buf[pos:] that ends an element of the events array (followed by
    `, {` or `]`), or -1. A `}` closing a nested object can look the same; then the batch fails
    to decode and those events take the slow path."""
    k = len(buf)
    for _ in range(_BOUNDARY_TRIES):
        k = buf.rfind("}", pos, k)
        if k < 0:
            return -1
        if _BOUNDARY.match(buf, k + 1):
            return k + 1
    return -1


def _batch(st: _Stream, pos: int, batch: Batch) -> tuple[int, int]:
    """Decode the complete events in the buffer from pos in one call: (events, end), or (0, end of
    the region to read one event at a time) when they do not decode as the typed events."""
    cut = _last_boundary(st.buf, pos)
    if cut <= pos:
        return 0, pos
    try:
        events = batch.decoder.decode("[" + st.buf[pos:cut] + "]")
    except Exception:  # msgspec's DecodeError/ValidationError: a field of another type, or a bad cut
        return 0, cut
    batch.on_events(events)
    return len(events), cut


def _events(st: _Stream, decoder: json.JSONDecoder, on_event: Callable[[dict[str, Any]], None],
            res: ReadResult, batch: Batch | None = None) -> bool:
    """Stream the array; False when the input ends before the array does."""
    if not st.expect("["):
        return False
    scan = decoder.scan_once  # type: ignore[attr-defined]  # the C scanner, without raw_decode's wrapper
    skip = _SEPARATORS.match
    count = skipped = 0
    slow_left = 0  # characters to read event by event, after a batch that did not decode
    try:
        while True:  # the hot loop: a batch, or one event, per turn; the slow path at buffer edges
            buf = st.buf
            pos = skip(buf, st.pos).end()  # type: ignore[union-attr]  # `*` always matches
            if pos >= len(buf):
                st.pos = pos
                if not st.refill():
                    return False
                continue
            if buf[pos] == "]":
                st.pos = pos + 1
                return True
            if batch is not None and slow_left <= 0 and buf[pos] == "{":
                n, end = _batch(st, pos, batch)
                if n:
                    count += n
                    st.pos = end
                    continue
                if end == pos and len(buf) - pos < _CHUNK and not st.eof:
                    # The rest is the start of one event: read on first. Scanning it would fail at
                    # the buffer's end, and json's error counts the lines of all the text before.
                    st.pos = pos
                    if st.refill():
                        continue
                slow_left = end - pos
            try:
                ev, end = scan(buf, pos)
            except (StopIteration, json.JSONDecodeError):
                st.pos = pos
                ok, ev = st.value(decoder)  # cut by the buffer's end: refill, or end of input
                if not ok:
                    return False
                end = st.pos
                slow_left = 0
            else:
                if end >= len(buf) and not st.eof:
                    st.pos = pos
                    st.refill()
                    continue
                slow_left -= end - pos
            st.pos = end
            if isinstance(ev, dict):
                count += 1
                on_event(ev)
            else:
                skipped += 1
    finally:
        res.events += count
        res.skipped += skipped


def is_gzip(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False

