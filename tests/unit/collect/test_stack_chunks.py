"""py-spy's chrometrace, converted: each thread's root frame names it. Attached while the
interpreter still starts, py-spy cannot tell a thread's native id and writes the Python thread id
in hex (`format_threadid`: "{:#X}"); the main thread is then known by its name. Once a rank's main
thread read as "Thread None" and the job's slow rank had no stack samples of its own."""

from __future__ import annotations

import json
from pathlib import Path

from gpubottle.collect.stack_chunks import chrometrace_to_evented, read_evented


def _chunk(tmp_path: Path, roots: list[str]) -> list:
    events = []
    for tid, root in enumerate(roots, 1):
        events += [{"ph": "B", "name": root, "tid": tid, "ts": 0},
                   {"ph": "B", "name": "step", "tid": tid, "ts": 0,
                    "args": {"filename": "train.py", "line": 3}},
                   {"ph": "E", "name": "step", "tid": tid, "ts": 100000},
                   {"ph": "E", "name": root, "tid": tid, "ts": 100000}]
    raw, dest = tmp_path / "raw.json", tmp_path / "chunk.speedscope.json"
    raw.write_text(json.dumps(events))
    assert chrometrace_to_evented(str(raw), str(dest), 4242)
    return read_evented(str(dest))[1]


def test_the_main_thread_by_its_native_id_or_by_its_name(tmp_path: Path):
    native = _chunk(tmp_path, ["thread (4242): MainThread", "thread (4250): gpubottle-flush"])
    assert [(t.os_tid, t.thread, t.is_main) for t in native] == [
        (4242, "MainThread", True), (4250, "gpubottle-flush", False)]
    early = _chunk(tmp_path, ["thread (0x7F3A2B1C0740): MainThread", "thread (0x7F3A29000640)"])
    assert [(t.os_tid, t.thread, t.is_main) for t in early] == [
        (None, "MainThread", True), (None, "?", False)]
