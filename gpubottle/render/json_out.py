"""The report JSON contract (schema gpubottle.report/1)."""

from __future__ import annotations

from typing import IO

from gpubottle import jsonio
from gpubottle.report import Report


def render_json(report: Report, stream: IO[str]) -> None:
    jsonio.write(stream, report.to_contract(), indent=1)
    stream.write("\n")
