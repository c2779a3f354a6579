"""Property-based fuzzing of the trace reader: whatever the file holds, `report` either explains it
or says in one line why it cannot (GpubottleError, exit 3); never an internal error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from conftest import TRACES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubottle.errors import EXIT_BAD_INPUT, GpubottleError
from gpubottle.rules import diagnose
from gpubottle.trace.load import trace_evidence


def _step(k: int) -> list[dict[str, object]]:
    """One 100 ms step of the 2.x shape: half of it waiting for a batch, then a kernel and a copy."""
    t = 100_000.0 * k
    return [
        {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "ts": t, "dur": 100_000.0,
         "pid": 1, "tid": 1},
        {"ph": "X", "cat": "user_annotation",
         "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ts": t + 10,
         "dur": 50_000.0, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": t + 60_000, "dur": 30_000.0, "pid": 1,
         "tid": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 60_010, "dur": 5.0,
         "pid": 1, "tid": 1, "args": {"correlation": 2 * k}},
        {"ph": "X", "cat": "kernel", "name": "volta_sgemm_64x64_nt", "ts": t + 60_020, "dur": 20_000.0,
         "pid": 0, "tid": 7, "args": {"correlation": 2 * k}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": t + 83_000,
         "dur": 2_000.0, "pid": 0, "tid": 7, "args": {"correlation": 2 * k + 1, "bytes": 4096}},
    ]


GOOD = [e for k in range(1, 7) for e in _step(k)] + [
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 150_000.0, "pid": 1, "tid": 1,
     "args": {"Device Type": 1, "Device Id": 0, "Total Allocated": 1024, "Total Reserved": 2048}},
]

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from(["ph", "cat", "name", "ts", "dur", "args", "pid", "tid"])


def _check(path: Path) -> None:
    try:
        report = diagnose(trace_evidence(str(path)))
    except GpubottleError as exc:
        assert exc.exit_code == EXIT_BAD_INPUT
        assert str(exc) and "\n" not in str(exc)
    else:
        assert report.primary


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, len(GOOD) - 1), _keys, _values), min_size=1, max_size=6),
       extra=st.lists(_values, max_size=3))
def test_events_with_fields_of_any_type_are_skipped_not_fatal(tmp_path: Path, edits, extra):
    events: list[object] = [dict(e) for e in GOOD]
    for i, key, value in edits:
        events[i][key] = value  # type: ignore[index]
    events += extra  # entries that are not objects at all
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}, allow_nan=True))
    _check(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 6000), flips=st.lists(st.tuples(st.integers(0, 6000), st.integers(1, 255)),
                                                max_size=4), gz=st.booleans())
def test_cut_and_flipped_bytes_never_crash_the_reader(tmp_path: Path, cut, flips, gz):
    raw = bytearray(json.dumps({"traceEvents": GOOD, "deviceProperties": [{"computeMajor": 8}]}).encode())
    for pos, mask in flips:
        raw[pos % len(raw)] ^= mask
    data = bytes(raw[: max(1, len(raw) - cut)])
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    _check(path)


def test_a_malformed_event_is_counted_in_the_notes(tmp_path: Path):
    events = [dict(e) for e in GOOD]
    events[4]["args"] = "not an object"
    events.append(17)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    ev = trace_evidence(str(path))
    assert ev.run.trace is not None
    assert any("2 events could not be read" in n for n in ev.run.trace.notes)
    assert diagnose(ev).primary == "data-starved"


def test_a_trace_with_nothing_usable_is_bad_input(tmp_path: Path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "M", "name": "process_name"}, 3, "x"]}))
    try:
        trace_evidence(str(path))
    except GpubottleError as exc:
        assert exc.exit_code == EXIT_BAD_INPUT and "no profiler events" in str(exc)
    else:
        raise AssertionError("expected a bad-input error")


def test_a_highly_compressible_gz_is_inflated_a_bounded_chunk_at_a_time(tmp_path: Path):
    from gpubottle.trace import reader

    step = json.dumps(GOOD[0]) + ","
    text = '{"traceEvents": [' + step * (40_000_000 // len(step)) + json.dumps(GOOD[1]) + "]}"
    path = tmp_path / "big.json.gz"
    path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    assert path.stat().st_size < len(text) / 20  # compresses more than 20x
    with open(path, "rb") as fh:
        stream = reader._Stream(fh, compressed=True)
        sizes = []
        while stream.refill():
            sizes.append(len(stream.buf) - stream.pos)
            stream.pos = len(stream.buf)
    assert max(sizes) <= reader._CHUNK + 4 and sum(sizes) == len(text)
    events: list[dict[str, object]] = []
    res = reader.read_trace(str(path), events.append)
    assert res.events == len(events) and not res.truncated


def _collected(path: Path, fast: bool) -> tuple[object, ...]:
    from gpubottle.trace import reader
    from gpubottle.trace.collect import EVENTS_DECODER, TraceData
    from gpubottle.trace.ranges import merge

    d = TraceData()
    res = reader.read_trace(str(path), d.on_event, reader.Batch(EVENTS_DECODER, d.on_batch) if fast else None)
    # Ranges as their union: the fast path folds nested host ops as it reads them.
    return (res.events, res.skipped, d.malformed, sorted(d.steps),
            {k: merge(d.roles[k].pairs()) for k in d.roles},
            (d.host_min, d.host_max), sorted(d.runtime_names.items()), merge(d.sync_spans.pairs()),
            sorted((k, v.count, v.bytes) for k, v in d.copies.items()), sorted(d.peak_allocated.items()),
            sorted(d.peak_reserved.items()), list(d.rt_corr), list(d.dev_corr), sorted(d.kernel_us.items()),
            sorted(d.loader_kinds.items()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, len(GOOD) - 1), _keys, _values), max_size=4))
def test_the_batch_decoder_reads_exactly_what_the_event_reader_reads(tmp_path: Path, edits):
    events: list[dict[str, object]] = [dict(e) for e in GOOD]
    for i, key, value in edits:
        events[i][key] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}, allow_nan=True))
    # repr: a NaN read both ways is the same reading, though NaN != NaN.
    assert repr(_collected(path, fast=True)) == repr(_collected(path, fast=False))


def test_the_recorded_traces_read_the_same_both_ways():
    for path in (TRACES).glob("*.json.gz"):
        assert _collected(path, fast=True) == _collected(path, fast=False), path.name
