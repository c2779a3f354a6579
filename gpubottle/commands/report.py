"""`gpubottle report`: explain a torch.profiler trace, or a saved run again (re-diagnosed, not re-run)."""

from __future__ import annotations

import sys

from gpubottle.commands.output import emit, write_patch
from gpubottle.commands.pictures import write_pictures
from gpubottle.sources import load_reports
from gpubottle.trace.progress import ReadProgress


def report_command(paths: list[str], json_path: str | None, fmt: str, html_path: str | None = None,
                   patch_path: str | None = None) -> int:
    # A line of progress while a large trace is read, where stderr is a terminal.
    progress = ReadProgress(sys.stderr) if sys.stderr.isatty() else None
    try:
        report = load_reports(paths, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    if html_path:
        write_pictures(report, html_path, in_run_dir=False)
    emit(report, sys.stdout, json_path, fmt)
    if patch_path:
        write_patch(report, patch_path, sys.stderr)
    return 0
