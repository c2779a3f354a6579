"""The HTML report and the Perfetto timeline of a made-up 6000-step run: self-contained, escaped,
within budget, with the run's numbers; the timeline readable by gpubottle's own trace reader, with
counter tracks. (Real runs' pictures: tests/e2e/test_pictures.py.)"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from factories import evidence
from html_check import check_html

from gpubottle.analysis.series import RunSeries
from gpubottle.render.html import render_html
from gpubottle.render.timeline import timeline
from gpubottle.report import Fact, Finding, Fix, Report
from gpubottle.trace.load import trace_evidence


def _long_run(steps: int = 6000) -> tuple[Report, RunSeries]:
    ev = evidence(steps=steps, step_s=0.05, wait_s=0.03, cores=2.0)
    s = RunSeries(t0=100.0, pid=42, cores=2.0)
    t = 100.0
    for i in range(steps):
        s.steps.append((t, t + 0.05 + 0.01 * (i % 7 == 0)))
        s.waits.append(0.03)
        s.batches.append((t, t + 0.03))
        t += 0.05 + 0.01 * (i % 7 == 0)
    ticks = [100.0 + k * 0.1 for k in range(int((t - 100.0) * 10))]  # 10 Hz samples, the whole run
    s.cpu = {"main process": [(x, 0.9) for x in ticks], "loader workers": [(x, 0.4) for x in ticks]}
    s.memory = {"main process (PSS)": [(x, 2.0e9) for x in ticks], "available": [(x, 8e9) for x in ticks]}
    s.marks = [(t - 1.0, "stopped (steps)")]
    report = Report(primary="data-starved", evidence=ev, findings=[Finding(
        "data-starved", "critical", 0.6, "waits <for> data & more",
        evidence=[Fact('the loop waits 30.0 ms in "a 50 ms step"')],
        fixes=[Fix("num_workers=4", where="x<script>alert(1)</script>.py:3",
                   change={"num_workers": [0, 4]})])])
    return report, s


def test_html_is_self_contained_escaped_and_within_budget_for_6000_steps():
    report, series = _long_run()
    buf = io.StringIO()
    render_html(report, buf, series)
    html = buf.getvalue()
    c = check_html(html)
    assert c.script == 0  # the essentials need no JavaScript
    assert c.svgs >= 4  # step time, input wait, CPU, memory (+ legend swatches)
    assert len(html.encode()) < 1_000_000, len(html)
    assert "<script>alert" not in html and "x&lt;script&gt;alert(1)&lt;/script&gt;.py:3" in html
    assert "waits &lt;for&gt; data &amp; more" in html and "&quot;a 50 ms step&quot;" in html
    # The run's numbers: the step-time line at 50-60 ms, the cores-available line at 2.
    step_chart = html[html.index("Step time"):html.index("Input wait")]
    assert "2 cores available" in html
    pts = re.search(r'points="([^"]+)"', step_chart)
    assert pts is not None and len(pts.group(1).split()) <= 400  # downsampled for display
    assert ">60<" in step_chart or ">50<" in step_chart  # a y tick at the steps' own scale


def test_timeline_has_counters_steps_and_reads_back(tmp_path: Path):
    _, series = _long_run(300)
    data = timeline(series, 42)
    phases = {e["ph"] for e in data["traceEvents"]}
    assert {"X", "C", "i", "M"} <= phases
    names = {e["name"] for e in data["traceEvents"] if e["ph"] == "C"}
    assert "CPU (cores): main process" in names and "input wait share" in names
    path = tmp_path / "timeline.json"
    path.write_text(json.dumps(data))
    # The project's own reader takes it: without a profiler window ours are the trace's steps and
    # DataLoader waits, named as torch.profiler names them.
    got = trace_evidence(str(path))
    assert len(got.steps.durations_s) == 300
    assert sum(got.steps.input_wait_s) > 0
