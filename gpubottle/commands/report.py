"""`gpubottle report`: explain a torch.profiler trace, or a saved run again (re-diagnosed, not re-run)."""

from __future__ import annotations

import sys

from gpubottle.commands.output import emit
from gpubottle.commands.pictures import write_pictures
from gpubottle.sources import load_reports


def report_command(paths: list[str], json_path: str | None, fmt: str, html_path: str | None = None) -> int:
    report = load_reports(paths)
    if html_path:
        write_pictures(report, html_path, in_run_dir=False)
    emit(report, sys.stdout, json_path, fmt)
    return 0
