"""The trace reader's typed fast path folds nested host ops as it reads and gives the breakdown the
event-by-event path gives."""

from __future__ import annotations

import gzip
from pathlib import Path

from conftest import ROOT

from gpubottle.trace.breakdown import breakdown
from gpubottle.trace.collect import EVENTS_DECODER, TraceData
from gpubottle.trace.reader import Batch, read_trace

REAL = ROOT / "tests" / "traces" / "hta_ns_resolution.pt.trace.json.gz"


def test_typed_fast_path_folds_nested_ops_to_the_same_breakdown(tmp_path: Path) -> None:
    """The batch decoder folds nested host ops as it reads (test_trace_fuzz checks both paths
    collect the same unions): the per-step breakdown is the event-by-event path's."""
    plain = tmp_path / "t.json"
    plain.write_bytes(gzip.decompress(REAL.read_bytes()))
    slow, fast = TraceData(), TraceData()
    read_trace(str(plain), slow.on_event)
    read_trace(str(plain), fast.on_event, Batch(EVENTS_DECODER, fast.on_batch))
    assert len(fast.roles["cpu_op"].starts) < len(slow.roles["cpu_op"].starts) / 2
    assert breakdown(fast).per_step == breakdown(slow).per_step

