"""The verdict for a person at a terminal: primary bottleneck, its cost, evidence, fixes."""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from gpubottle import vocabulary as v
from gpubottle.evidence.trials import change_text
from gpubottle.render import steps_aside
from gpubottle.render.account import cost, render_account
from gpubottle.render.ranks import render_ranks
from gpubottle.render.trials import render_trials
from gpubottle.report import Finding, Fix, Report

_STYLE = {"critical": "bold red", "warning": "bold yellow", "info": "bold cyan"}
_HEALTHY = "bold green"


def _change(fix: Fix) -> str:
    return ", ".join(change_text(name, old, new) for name, (old, new) in fix.change.items())


def item(con: Console, bullet: str, body: Text, indent: int = 2, hang: int | None = None) -> None:
    """A bullet whose wrapped lines stay indented under its text (or by `hang`), no trailing padding."""
    pad = indent + len(bullet) if hang is None else hang
    width = max(20, con.width - pad)
    for n, line in enumerate(body.wrap(con, width)):
        line.rstrip()
        prefix = " " * indent + bullet if n == 0 else " " * pad
        con.print(Text(prefix) + line)


def _finding_block(con: Console, f: Finding, numbered_from: int = 1) -> None:
    if f.evidence:
        con.print("[bold]Evidence[/bold]")
        for fact in f.evidence:
            item(con, "- ", Text(fact.text))
    if f.open_question:
        item(con, "? ", Text(f.open_question, style="yellow"))
    if f.fixes:
        con.print("[bold]Fixes[/bold]")
        for i, fix in enumerate(f.fixes, numbered_from):
            body = Text(fix.text)
            if fix.how:  # where the user makes the change: an option, a config key, a variable
                body.append("\n" + fix.how, style="bold")
            elif fix.change:
                body.append("\n" + (f"at {fix.where}: " if fix.where else ""), style="dim")
                body.append(_change(fix), style="bold")
            elif fix.where:
                body.append(f"\nsee {fix.where}", style="dim")
            if fix.expected:
                body.append("\nexpected: ", style="dim")
                body.append(fix.expected)
            item(con, f"{i}. ", body)


_CLOCKS = {"optimizer": "optimizer.step()", "backward": "backward()", "dataloader": "DataLoader batches",
           "profiler": "ProfilerStep# spans", "trace-optimizer": "the trace's Optimizer.step# spans"}


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def _steps_line(report: Report) -> str:
    s = report.step_summary
    if not s.count:
        return "Steps: none seen"
    out = f"{s.warmup} warm-up"
    if s.pauses:
        out += f", {s.pauses} pause(s)"
    if s.instrumented:
        out += f", {s.instrumented} under heavier probes"
    if s.unhooked:
        out += f", {s.unhooked} without its hooks"
    line = f"Steps: {s.count} ({out} left out), clock: {_CLOCKS.get(s.source, s.source)}"
    if s.median_s is not None and s.p90_s is not None:
        line += f"; median {s.median_s * 1e3:.1f} ms, p90 {s.p90_s * 1e3:.1f} ms"
    return line


def render_terminal(report: Report, stream: IO[str], width: int | None = None) -> None:
    # force_jupyter=False: to the stream given, also inside a notebook kernel (rich would display it)
    con = Console(file=stream, width=width, highlight=False, soft_wrap=False, force_jupyter=False)
    if width is None and con.width > 100:
        con.width = 100
    primary = report.primary
    head = report.lead
    con.print()
    if head is None:
        con.print(Text("gpubottle verdict: ", style="bold") + Text("INCONCLUSIVE", style="bold magenta"))
        lead = next((f for f in report.findings if f.severity != "info"), None)
        if lead is not None:  # still say what the evidence does show
            con.print(Text("main finding: ", style="bold") + Text(lead.category, style=_STYLE[lead.severity])
                      + Text(f" ({lead.severity}{cost(lead)})"))
            item(con, "", Text(lead.summary))
            _finding_block(con, lead)
            head = lead
    else:
        healthy = head.category == v.COMPUTE_BOUND
        style = _HEALTHY if healthy else _STYLE.get(head.severity, "bold")
        con.print(Text("gpubottle verdict: ", style="bold") + Text(head.category.upper(), style=style)
                  + Text(f"  ({head.severity}{cost(head)})"))
        item(con, "", Text(head.summary))
        if head.category != primary:  # a cost of the run leads; the steps have their own verdict
            item(con, "", Text(steps_aside(report, primary), style="dim"))
        _finding_block(con, head)
    others = [f for f in report.findings if f is not head]
    if others:
        con.print("[bold]Also found[/bold]")
        for f in others:
            body = Text(f"{f.category} ({f.severity}{cost(f, short=True)}): ",
                        style=_STYLE.get(f.severity, ""))
            body.append(f.summary, style="")
            for fix in f.fixes[:2]:
                body.append("\nfix: ", style="dim")
                body.append(fix.text + (f" [{fix.how or _change(fix)}]" if fix.change else ""), style="")
                if fix.where and not fix.change:
                    body.append(f" ({fix.where})", style="dim")
            item(con, "- ", body)
    render_account(con, report.evidence.account)
    render_ranks(con, report)
    if report.evidence.trials is not None:
        render_trials(con, report.evidence.trials)
    for note in report.notes:
        item(con, "note: ", Text(note), indent=0)
    item(con, "", Text(_steps_line(report), style="dim"), indent=0, hang=2)
    run = report.evidence.run
    if run.trace is not None:
        t = run.trace
        size = ""
        if t.bytes_total:
            size = (f", {t.bytes_total / (1 << 20):.1f} MB" if t.bytes_total >= (1 << 20)
                    else f", {t.bytes_total / 1024:.0f} KB")
        files = os.path.basename(t.files[0]) if len(t.files) == 1 else f"{len(t.files)} files"
        cut = " (cut short)" if t.truncated else ""
        con.print(Text(f"Trace: {t.events:,} events from {files}{size}{cut}", style="dim"))
    if run.kind == "run":
        bits = [f"exit {run.exit_code}" if run.exit_code is not None else "exit ?"]
        if run.stop_reason:
            bits.append(run.stop_reason)
        if run.duration_s is not None:
            bits.append(f"{run.duration_s:.1f} s")
        con.print(Text("Run: " + ", ".join(bits), style="dim"))
        if run.exception:  # what ended it (its traceback passed through above, often pages up)
            item(con, "", Text(f"Raised: {_first_line(run.exception)}", style="dim"), indent=0, hang=2)
        if run.run_dir:
            con.print(Text(f"Saved: {escape(run.run_dir)} (gpubottle report {run.run_dir})", style="dim"))
