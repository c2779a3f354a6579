"""The report as one self-contained HTML file: no script, no network, inline SVG charts.

Everything a terminal shows (verdict, evidence, fixes, notes, measured fixes) plus pictures of the
run over time: step time with warm-up, probe windows and stops marked, the input wait's share of each
step, CPU per role against the cores available, memory, GPU readings, the step breakdown bar and
the hot functions. Every string that comes from the user's script or machine is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import IO

from gpubottle import vocabulary as v
from gpubottle.analysis.series import RunSeries
from gpubottle.evidence import RankEvidence
from gpubottle.evidence.trials import change_text, setting_label
from gpubottle.render import steps_aside
from gpubottle.render.account import cost, detail, phase_label
from gpubottle.render.svg import bar, downsample, esc, line_chart
from gpubottle.report import Finding, Fix, Report
from gpubottle.units import pct_or_dash, seconds
from gpubottle.vocabulary import BREAKDOWN_LABELS

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;max-width:760px;margin:24px auto;padding:0 12px;color:#111}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}
.verdict{font-weight:bold;padding:2px 6px;border:2px solid #111}
code{background:#f3f3f3;padding:0 3px}figure{margin:16px 0}figcaption{font-weight:bold}
ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:14px;font-size:12px}
.swatch{display:inline-block;width:12px;height:12px;border:1px solid #555;vertical-align:middle}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
td.n{text-align:right}.dim{color:#555}
@media print{body{max-width:none}}
"""


def _fix(fix: Fix) -> str:
    parts = [esc(fix.text)]
    if fix.how:
        parts.append(f"<br><b>{esc(fix.how)}</b>")
    elif fix.change:
        change = ", ".join(esc(change_text(k, v[0], v[-1])) if k == "batch_index" else
                           f"{esc(k)}: {esc(v[0])} &rarr; {esc(v[-1])}" for k, v in fix.change.items())
        where = f"at <code>{esc(fix.where)}</code>: " if fix.where else ""
        parts.append(f'<br><span class="dim">{where}</span><b>{change}</b>')
    elif fix.where:
        parts.append(f'<br><span class="dim">see <code>{esc(fix.where)}</code></span>')
    if fix.expected:
        parts.append(f'<br><span class="dim">expected:</span> {esc(fix.expected)}')
    return "<li>" + "".join(parts) + "</li>"


def _finding(f: Finding, lead: bool) -> str:
    share = cost(f)
    head = (f'<p><span class="verdict">{esc(f.category.upper())}</span> ({esc(f.severity)}{share})</p>'
            if lead else f"<h3>{esc(f.category)} ({esc(f.severity)}{share})</h3>")
    out = [head, f"<p>{esc(f.summary)}</p>"]
    if f.evidence:
        out.append("<p><b>Evidence</b></p><ul>" + "".join(f"<li>{esc(x.text)}</li>" for x in f.evidence)
                   + "</ul>")
    if f.fixes:
        out.append("<p><b>Fixes</b></p><ol>" + "".join(_fix(x) for x in f.fixes) + "</ol>")
    return "\n".join(out)


def _charts(report: Report, s: RunSeries | None) -> list[str]:
    ev = report.evidence
    out: list[str] = []
    if s is not None and s.steps:
        marks = [(s.rel(t), label) for t, label in s.marks]
        warm = report.step_summary.warmup
        if 0 < warm < len(s.steps):
            marks.append((s.rel(s.steps[warm][0]), "end of warm-up"))
        if s.window is not None:
            marks += [(s.rel(s.window[0]), "profiler window opens"),
                      (s.rel(s.window[1]), "profiler window saved")]
        ends = [s.rel(s.steps[-1][1])] + [s.rel(p[-1][0]) for p in s.cpu.values() if p]
        span = (0.0, max(ends))
        steps = [(s.rel(hi), (hi - lo) * 1e3) for lo, hi in s.steps]
        out.append(line_chart("Step time", {"step (ms)": downsample(steps)}, "ms", "{:.0f}",
                              note="(dotted lines: end of warm-up, probe windows, stops)",
                              marks=marks, x_range=span))
        waits = [(s.rel(hi), w / (hi - lo)) for (lo, hi), w in zip(s.steps, s.waits) if hi > lo]
        if ev.loaders and waits:
            out.append(line_chart("Input wait: share of each step spent waiting for the batch",
                                  {"input wait": downsample(waits)}, "share", "{:.0%}", y_max=1.0,
                                  marks=marks, x_range=span))
        if s.cpu:
            out.append(line_chart("CPU by role", {k: downsample([(s.rel(t), v) for t, v in p])
                                                  for k, p in s.cpu.items()}, "cores", "{:.1f}",
                                  limit=s.cores, limit_label=f"{s.cores:g} cores available"
                                  if s.cores else "", marks=marks, x_range=span))
        pss = {k: p for k, p in s.memory.items() if k != "available"}
        if pss:
            avail = s.memory.get("available") or []
            note = (f"(memory available: {min(v for _, v in avail) / (1 << 30):.1f} GiB at its lowest)"
                    if avail else "")
            out.append(line_chart("Memory (PSS: pages shared by forked workers counted once)",
                                  {k: downsample([(s.rel(t), v / (1 << 30)) for t, v in p])
                                   for k, p in pss.items()}, "GiB", "{:.2f}", note=note,
                                  marks=marks, x_range=span))
        if s.gpu:
            out.append(line_chart("GPU (NVML)", {k: downsample([(s.rel(t), v) for t, v in p])
                                                 for k, p in s.gpu.items()}, "share", "{:.0%}",
                                  y_max=1.0, marks=marks, x_range=span))
        if s.pcie:
            out.append(line_chart("PCIe (NVML)", {k: downsample([(s.rel(t), v / 1e9) for t, v in p])
                                                  for k, p in s.pcie.items()}, "GB/s", "{:.2f}",
                                  marks=marks, x_range=span))
    elif ev.steps.durations_s:
        pts = [(float(i), d * 1e3) for i, d in enumerate(ev.steps.durations_s)]
        out.append(line_chart("Step time", {"step (ms)": downsample(pts)}, "ms", "{:.0f}",
                              x_label="step"))
    if ev.gpu is not None and ev.gpu.breakdown:
        out.append(bar("Step breakdown (profiler window)",
                       {BREAKDOWN_LABELS.get(k, k): v for k, v in ev.gpu.breakdown.items()}))
    return [c for c in out if c]


def _hot(report: Report) -> str:
    st = report.evidence.stacks
    if st is None or not (st.main_hot or st.worker_hot):
        return ""
    rows = [("main process", x) for x in st.main_hot[:8]] + [("loader workers", x)
                                                              for x in st.worker_hot[:5]]
    return ("<h2>Hot functions (py-spy)</h2><table><tr><th>function</th><th>where</th><th>role</th>"
            "<th>share of samples</th></tr>" + "".join(
                f"<tr><td>{esc(x.function)}</td><td><code>{esc(x.location)}</code></td>"
                f"<td>{esc(role)}</td><td class=n>{x.share:.0%}</td></tr>" for role, x in rows) + "</table>")


def _comm(r: RankEvidence) -> str:
    hidden = (f" ({pct_or_dash(r.communication_overlap)} hidden)"
              if r.communication_overlap is not None else "")
    return pct_or_dash(r.communication_share) + hidden


# The rank table's columns: a heading and a cell; a column no rank has a value for is left out
# (a folder of traces has no pids, workers or memory; a CPU job no communication or kernels).
_RANK_COLUMNS: list[tuple[str, str, Callable[[RankEvidence], object]]] = [
    ("node", "", lambda r: r.node),
    ("pid", "n", lambda r: r.pid),
    ("file", "", lambda r: r.file if r.pid is None else None),
    ("steps", "n", lambda r: r.steps),
    ("mean step (ms)", "n", lambda r: f"{r.mean_step_s * 1e3:.1f}" if r.mean_step_s else None),
    ("input wait", "n", lambda r: pct_or_dash(r.input_share) if r.input_share is not None else None),
    ("computing", "n", lambda r: pct_or_dash(r.busy_share) if r.busy_share is not None else None),
    ("kernels busy", "n", lambda r: pct_or_dash(r.kernel_share) if r.kernel_share is not None else None),
    ("communication", "n", lambda r: _comm(r) if r.communication_share is not None else None),
    ("workers", "n", lambda r: r.workers or None),
    ("workers' cores", "n", lambda r: f"{r.workers_cores:.2f}" if r.workers_cores is not None else None),
    ("memory (GiB)", "n", lambda r: f"{r.memory_bytes / (1 << 30):.2f}" if r.memory_bytes else None),
    ("end", "", lambda r: r.exception or r.status),
]


def _ranks(report: Report) -> str:
    """One row per rank (a job's ranks, or a folder of ranks' traces), in rank order, the shown
    rank marked, with each rank's own verdict where it has one."""
    ev = report.evidence
    if len(ev.ranks) < 2:
        return ""
    cols = [c for c in _RANK_COLUMNS if any(c[2](r) is not None for r in ev.ranks)]
    verdicts = [report.verdict_of(r.rank, r.node) for r in ev.ranks]
    head = "".join(f"<th>{esc(name)}</th>" for name, _, _ in cols)
    if any(verdicts):
        head += "<th>verdict</th>"
    rows = []
    for r, own in zip(ev.ranks, verdicts):
        cells = "".join(f"<td{' class=n' if kind else ''}>{esc(_cell(get(r)))}</td>" for _, kind, get in cols)
        if any(verdicts):
            cells += f"<td>{esc(own.verdict if own else '-')}</td>"
        mark = " (shown)" if r.rank is not None and r.rank == ev.shown_rank else ""
        rows.append(f"<tr><td>{esc(r.rank if r.rank is not None else '?')}{mark}</td>{cells}</tr>")
    return "<h2>Ranks</h2><table><tr><th>rank</th>" + head + "</tr>" + "".join(rows) + "</table>"


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _trials(report: Report) -> str:
    t = report.evidence.trials
    if t is None:
        return ""
    rows = t.trials + ([t.upper_bound] if t.upper_bound else [])
    body = []
    for x in rows:
        name = setting_label(x.change)
        if x.mean_s is None:
            why = esc(x.failed or "no measurement")
            body.append(f"<tr><td>{esc(name)}</td><td colspan=3>{why}</td></tr>")
            continue
        lo, hi = x.mean_interval_s or [x.mean_s, x.mean_s]
        body.append(f"<tr><td>{esc(name)}</td><td class=n>{x.mean_s * 1e3:.1f}</td>"
                    f"<td class=n>{lo * 1e3:.1f}..{hi * 1e3:.1f}</td>"
                    f"<td class=n>{(x.speedup or 0):.2f}x</td></tr>")
    return ("<h2>Measured fixes</h2><table><tr><th>setting</th><th>mean step (ms)</th>"
            "<th>95% interval</th><th>speed-up</th></tr>" + "".join(body) + "</table>")


def _account(report: Report) -> str:
    """The run's wall time by phase: one bar, and a line of what each phase was."""
    entries = [e for e in report.evidence.account if e.seconds > 0]
    if not entries:
        return ""
    total = sum(e.seconds for e in entries)
    shares = {phase_label(e): e.seconds / total for e in entries}
    rows = "".join(f"<tr><td>{esc(phase_label(e))}</td><td class=n>"
                   f"{esc(seconds(e.seconds))}</td><td class=n>{e.share:.0%}</td><td>{esc(detail(e))}"
                   "</td></tr>" for e in entries)
    return (bar(f"Where the run's {seconds(total)} went (launch to exit)", shares)
            + "<table><tr><th>phase</th><th>time</th><th>share</th><th>what</th></tr>" + rows
            + "</table>")


_CELL = re.compile(r"cell \[(\d+)\]")


def _cells(report: Report) -> str:
    """A notebook's cells that the report names ("cell [3], line 8"), with their code."""
    cells = report.evidence.run.cells
    if not cells:
        return ""
    said = " ".join([x.where or "" for f in report.findings for x in f.fixes]
                    + [x.text + (x.how or "") for f in report.findings for x in f.fixes]
                    + [fact.text for f in report.findings for fact in f.evidence]
                    + [lo.site or "" for lo in report.evidence.loaders]
                    + [lo.dataset_getitem or "" for lo in report.evidence.loaders])
    named = sorted({int(n) for n in _CELL.findall(said) if n in cells})
    if not named:
        return ""
    return "<h2>Notebook cells named above</h2>" + "".join(
        f"<p><b>cell [{n}]</b></p><pre>" + "\n".join(
            f'<span class="dim">{i:3d}</span> {esc(line)}'
            for i, line in enumerate(cells[str(n)].splitlines(), 1)) + "</pre>" for n in named)


def render_html(report: Report, stream: IO[str], series: RunSeries | None = None) -> None:
    run = report.evidence.run
    primary = report.primary
    head = report.lead
    shown = head.category if head is not None else v.INCONCLUSIVE
    title = f"gpubottle: {shown} - {run.target or (run.trace.files[0] if run.trace else 'report')}"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>gpubottle verdict: {esc(shown.upper())}</h1>"]
    if run.command:
        parts.append(f'<p class="dim">{esc(" ".join(run.command))}</p>')
    if head is not None:
        parts.append(_finding(head, lead=True))
        if head.category != primary:
            parts.append(f'<p class="dim">{esc(steps_aside(report, primary))}</p>')
    others = [f for f in report.findings if f is not head]
    if others:
        parts.append("<h2>Also found</h2>" + "\n".join(_finding(f, lead=False) for f in others))
    account = _account(report)
    if account:
        parts.append("<h2>The whole run</h2>" + account)
    charts = _charts(report, series)
    if charts:
        parts.append("<h2>Over the run</h2>" + "\n".join(charts))
    parts += [_ranks(report), _hot(report), _trials(report), _cells(report)]
    if report.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in report.notes)
                     + "</ul>")
    s = report.step_summary
    med = f"; median {s.median_s * 1e3:.1f} ms" if s.median_s is not None else ""
    parts.append(f'<p class="dim">Steps: {s.count} ({s.warmup} warm-up, {s.pauses} pauses, '
                 f"{s.instrumented} under heavier probes"
                 + (f", {s.unhooked} without its hooks" if s.unhooked else "") + f" left out){med}. "
                 f"Run directory: {esc(run.run_dir or '-')}</p></body></html>")
    stream.write("\n".join(p for p in parts if p) + "\n")
