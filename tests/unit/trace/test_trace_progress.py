"""The progress line of a long trace read: nothing for a quick read, redrawn at most every
REDRAW_S, within 80 columns, erased at the end; the reader reports its bytes as it goes."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from conftest import TRACES

from gpubottle.trace import progress as p
from gpubottle.trace.collect import TraceData
from gpubottle.trace.reader import read_trace

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_quick_read_prints_nothing_and_a_long_one_a_line_that_is_then_erased():
    out, clock = io.StringIO(), Clock()
    bar = p.ReadProgress(out, clock)
    bar.start("trace.json", 400 << 20)
    clock.t = p.SHOW_AFTER_S / 2
    bar.advance(100 << 20)
    bar.stage("analysing")
    bar.close()
    assert out.getvalue() == ""  # under SHOW_AFTER_S: a small trace's report is left alone

    bar.start("a-very-long-name-" * 8 + ".json", 400 << 20)
    clock.t += p.SHOW_AFTER_S
    bar.advance(100 << 20)
    clock.t += p.REDRAW_S / 2
    bar.advance(150 << 20)  # too soon to redraw
    clock.t += p.REDRAW_S
    bar.advance(800 << 20)  # an estimate past the end is shown as the end
    bar.stage("analysing 2,000 events")
    lines = out.getvalue().split("\r")[1:]
    assert len(lines) == 3 and all(len(x) <= 80 for x in lines)
    assert "25% (100 of 400 MB)" in lines[0] and "100% (400 of 400 MB)" in lines[1]
    assert lines[2].rstrip().endswith("analysing 2,000 events")
    bar.close()
    assert out.getvalue().endswith("\r" + " " * max(len(x) for x in lines) + "\r")


def test_the_reader_reports_its_bytes_as_it_goes(tmp_path: Path):
    seen: list[int] = []
    for name, data in (("plain.json", gzip.decompress((TRACES / "hta_ns_resolution.pt.trace.json.gz")
                                                         .read_bytes())),
                       ("packed.json.gz", (TRACES / "hta_ns_resolution.pt.trace.json.gz").read_bytes())):
        path = tmp_path / name
        path.write_bytes(data)
        seen.clear()
        d = TraceData()
        read_trace(str(path), d.on_event, on_read=seen.append)
        assert len(seen) > 1 and seen == sorted(seen) and seen[-1] == len(data), name
