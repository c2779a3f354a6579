"""The report JSON contract (schema gpubottle.report/1)."""

from __future__ import annotations

import json
from typing import IO

from gpubottle.report import Report


def render_json(report: Report, stream: IO[str]) -> None:
    json.dump(report.to_contract(), stream, indent=1)
    stream.write("\n")
