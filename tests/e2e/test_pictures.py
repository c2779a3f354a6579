"""The HTML report and the Perfetto timeline: self-contained, escaped, within budget, with the run's
real numbers; the timeline readable by gpubottle's own trace reader, with counter tracks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import TRACES, gpubottle_here
from html_check import check_html

from gpubottle.trace.load import trace_evidence


def test_a_real_run_writes_index_html_and_an_aligned_timeline(loop_run, tmp_path: Path):
    proc, rep = loop_run.proc, loop_run.report
    assert proc.returncode == 0 and rep is not None, proc.stderr
    run = tmp_path / "run"
    shutil.copytree(loop_run.dir / "run", run)  # the shared run stays as it was
    html = (run / "index.html").read_text()
    c = check_html(html)
    assert c.svgs >= 3 and "Step time" in html and "CPU by role" in html
    assert (loop_run.dir / "out" / "r.html").read_text() == html  # run's --html: the same page
    data = json.loads((run / "timeline.json").read_text())
    assert data["otherData"]["aligned_to_profiler_window"] is True
    events = data["traceEvents"]
    assert any(str(e.get("name", "")).startswith("ProfilerStep#") for e in events)  # the window's
    ours = [e for e in events if str(e.get("name", "")).startswith("step ")]
    assert len(ours) == rep["steps"]["count"]
    window = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    # Aligned: the window's steps fall inside our steps' span, on one clock.
    assert ours[0]["ts"] <= min(e["ts"] for e in window) <= ours[-1]["ts"] + ours[-1]["dur"]
    got = trace_evidence(str(run / "timeline.json"))
    assert got.steps.durations_s  # read back as a trace, ProfilerStep# spans and all
    # `report --html` on the saved run draws the same charts over time.
    again = gpubottle_here("report", str(run), "--html", str(tmp_path / "again.html"))
    assert again.returncode == 0
    assert "CPU by role" in (tmp_path / "again.html").read_text()


def test_report_html_of_a_trace_has_its_breakdown(tmp_path: Path):
    traces = TRACES
    trace = next(traces.glob("*.pt.trace.json.gz"))
    out = tmp_path / "t.html"
    proc = gpubottle_here("report", str(trace), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    c = check_html(out.read_text())
    assert c.svgs >= 1 and "Step time" in out.read_text()


def test_a_folder_of_ranks_gets_a_row_per_rank(tmp_path: Path):
    import shutil

    traces = TRACES
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for i, name in enumerate(("starved_single", "fed")):  # two ranks, one slow
        shutil.copy(traces / f"{name}.pt.trace.json.gz", ranks / f"rank{i}.pt.trace.json.gz")
    out = tmp_path / "r.html"
    proc = gpubottle_here("report", str(ranks), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    check_html(html)
    table = html[html.index("<h2>Ranks</h2>"):]
    assert table.count("<tr>") == 3 and "rank0.pt.trace.json.gz" in table


