"""Gate results for people and for CI systems: a terminal table, JUnit XML (one test case per
budget), Markdown (also GitHub's step summary) and GitHub Actions annotations."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import IO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpubottle.gate.budgets import FAIL, INCONCLUSIVE, PASS, SKIPPED, BudgetResult

_STYLE = {PASS: "bold green", FAIL: "bold red", INCONCLUSIVE: "bold yellow", SKIPPED: "dim"}
_WORD = {PASS: "PASS", FAIL: "FAIL", INCONCLUSIVE: "NOISE?", SKIPPED: "skipped"}


def render_table(results: list[BudgetResult], overall: str, stream: IO[str], width: int | None) -> None:
    con = Console(file=stream, width=width, highlight=False, force_jupyter=False)  # a stream, even in Jupyter
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("budget", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("measured")
    table.add_column("limit")
    for r in results:
        table.add_row(r.name, Text(_WORD[r.status], style=_STYLE[r.status]), r.measured, r.limit)
    con.print(table)
    for r in results:
        if r.status != PASS:
            con.print(Text(f"{r.name}: ", style=_STYLE[r.status]) + Text(r.message))
    word = {PASS: "passed", FAIL: "FAILED", INCONCLUSIVE: "inconclusive (inside the noise or unmeasured)"}
    con.print(Text("gpubottle gate: ", style="bold") + Text(word[overall], style=_STYLE[overall]))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# What XML 1.0 cannot hold: control characters other than tab, newline and carriage return, lone
# surrogates, and U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Text a JUnit reader can parse: terminal colour codes and characters XML forbids removed."""
    return _NOT_XML.sub("", _ANSI.sub("", text))


def render_junit(results: list[BudgetResult], stream: IO[str], suite: str = "gpubottle gate") -> None:
    failures = sum(r.status == FAIL for r in results)
    skipped = sum(r.status in (SKIPPED, INCONCLUSIVE) for r in results)
    root = ET.Element("testsuites", name=suite, tests=str(len(results)), failures=str(failures),
                      errors="0", skipped=str(skipped))
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)), failures=str(failures),
                       errors="0", skipped=str(skipped))
    for r in results:
        case = ET.SubElement(ts, "testcase", classname="gpubottle.gate", name=xml_text(r.name))
        if r.status == FAIL:
            fail = ET.SubElement(case, "failure", message=xml_text(r.message), type="budget")
            fail.text = xml_text(f"measured {r.measured}; limit {r.limit}")
        elif r.status in (SKIPPED, INCONCLUSIVE):
            ET.SubElement(case, "skipped", message=xml_text(f"{r.status}: {r.message}"))
        out = ET.SubElement(case, "system-out")
        out.text = xml_text(r.message)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")


def render_markdown(results: list[BudgetResult], overall: str, stream: IO[str]) -> None:
    icon = {PASS: "✅ pass", FAIL: "❌ fail", INCONCLUSIVE: "⚠️ inside the noise", SKIPPED: "➖ skipped"}
    stream.write(f"### gpubottle gate: {icon[overall]}\n\n")
    stream.write("| budget | result | measured | limit | detail |\n|---|---|---|---|---|\n")
    for r in results:
        cells = [r.name, icon[r.status], r.measured, r.limit, r.message]
        stream.write("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n")
    stream.write("\n")


def render_github_annotations(results: list[BudgetResult], stream: IO[str]) -> None:
    for r in results:
        if r.status not in (FAIL, INCONCLUSIVE):
            continue
        level = "error" if r.status == FAIL else "warning"
        msg = r.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        title = f"gpubottle gate: {r.name}".replace(",", "%2C").replace("::", "%3A%3A")
        stream.write(f"::{level} title={title}::{msg}\n")
