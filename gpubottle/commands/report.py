"""`gpubottle report`: explain a torch.profiler trace, or a saved run again (re-diagnosed, not re-run)."""

from __future__ import annotations

import sys

from gpubottle.commands.output import emit
from gpubottle.sources import load_report


def report_command(path: str, json_path: str | None, fmt: str) -> int:
    report = load_report(path)
    emit(report, sys.stdout, json_path, fmt)
    return 0
