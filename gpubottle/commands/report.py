"""`gpubottle report`: explain a torch.profiler trace, or a saved run again (re-diagnosed, not re-run)."""

from __future__ import annotations

import sys

from gpubottle.commands.output import emit, write_patch
from gpubottle.commands.pictures import write_pictures
from gpubottle.sources import load_reports


def report_command(paths: list[str], json_path: str | None, fmt: str, html_path: str | None = None,
                   patch_path: str | None = None) -> int:
    report = load_reports(paths)
    if html_path:
        write_pictures(report, html_path, in_run_dir=False)
    emit(report, sys.stdout, json_path, fmt)
    if patch_path:
        write_patch(report, patch_path, sys.stderr)
    return 0
