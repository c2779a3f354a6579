"""A large trace read in parts on several cores gives what one reader gives, and a cut that is not
between two events is caught and the file read in one piece. Real traces, made "large" by lowering
the size from which the parts are used."""

from __future__ import annotations

import gzip
import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import TRACES

from gpubottle.trace import parallel
from gpubottle.trace.load import trace_evidence

pytestmark = pytest.mark.unit
SHARED_2021 = next((TRACES.parent.parent.parent / "shared" / "traces" / "kineto-resnet50-num_workers_0")
                   .glob("*.json.gz"))


def _plain(src: Path, dest: Path) -> Path:
    dest.write_bytes(gzip.decompress(src.read_bytes()))
    return dest


def _close(a: Any, b: Any, where: str = "") -> None:
    """Equal, floats to 1e-9 relative: the parts add their sums in another order."""
    if isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def _evidence(path: Path, parts: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 12 if parts else 1 << 40)
    monkeypatch.setattr(parallel, "_usable_parts", lambda: 3)
    out: dict[str, Any] = json.loads(json.dumps(trace_evidence(str(path)).to_json()))
    return out


@pytest.mark.parametrize("name", ["hta_ns_resolution", "h100_data_starved", "h200_copies", "2021"])
def test_a_trace_read_in_parts_gives_the_same_evidence(name: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    src = SHARED_2021 if name == "2021" else TRACES / f"{name}.pt.trace.json.gz"
    path = _plain(src, tmp_path / "trace.json")
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(parallel, "_usable_parts", lambda: 3)
    assert parallel.read_in_parts(str(path)) is not None, "not read in parts"
    _close(_evidence(path, True, monkeypatch), _evidence(path, False, monkeypatch), name)


def test_a_cut_inside_an_event_falls_back_to_one_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every event's name holds `}, {`: each nominal cut lands inside a string, a part fails to
    parse, and the whole file is read in one piece with the same result."""
    data = json.loads(gzip.decompress((TRACES / "h100_data_starved.pt.trace.json.gz").read_bytes()))
    for e in data["traceEvents"]:
        if e.get("cat") == "cpu_op":
            e["name"] = e["name"] + "}, {" * 40
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(data))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(parallel, "_usable_parts", lambda: 3)
    assert parallel.read_in_parts(str(path)) is None
    _close(_evidence(path, True, monkeypatch), _evidence(path, False, monkeypatch))


def test_a_truncated_trace_in_parts_keeps_its_complete_events(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    text = gzip.decompress((TRACES / "h100_compute_bound.pt.trace.json.gz").read_bytes())
    path = tmp_path / "trace.json"
    path.write_bytes(text[: len(text) * 9 // 10])
    serial = _evidence(path, False, monkeypatch)
    assert serial["run"]["trace"]["truncated"]
    _close(_evidence(path, True, monkeypatch), serial)


def test_small_compressed_or_threaded_reads_stay_in_one_piece(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    gz = TRACES / "h100_data_starved.pt.trace.json.gz"
    plain = _plain(gz, tmp_path / "trace.json")
    assert parallel.read_in_parts(str(plain)) is None  # under PARALLEL_MIN_BYTES
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(parallel, "_usable_parts", lambda: 1)
    assert parallel.read_in_parts(str(plain)) is None  # one core
    monkeypatch.setattr(parallel, "_usable_parts", lambda: 2)
    assert parallel.read_in_parts(str(gz)) is None  # a gzip stream is read from its start
    monkeypatch.setattr(parallel.sys, "platform", "darwin")
    assert parallel.read_in_parts(str(plain)) is None  # fork is Linux's only
    monkeypatch.setattr(parallel.sys, "platform", "linux")
    assert parallel.read_in_parts(str(plain)) is not None
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 2)
    assert parallel.read_in_parts(str(plain)) is None  # no fork beside other threads


def test_a_part_whose_process_dies_sends_the_file_to_one_reader(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    """A part's process killed (as the kernel kills one for memory) fails its result instead of
    leaving report waiting for it; the file is then read in one piece."""
    path = _plain(TRACES / "h100_data_starved.pt.trace.json.gz", tmp_path / "trace.json")
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(parallel, "_usable_parts", lambda: 2)
    real = parallel._read_part

    def dies_in_a_child(job: tuple) -> object:
        if not job[3]:  # not the first part: the one a forked process reads
            os.kill(os.getpid(), signal.SIGKILL)
        return real(job)

    monkeypatch.setattr(parallel, "_read_part", dies_in_a_child)
    assert parallel.read_in_parts(str(path)) is None
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 40)
    assert trace_evidence(str(path)).gpu is not None
