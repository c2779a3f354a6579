"""Writing a finished report where the user asked: terminal, --json file, the run directory."""

from __future__ import annotations

import os
import sys
from typing import IO

from gpubottle.errors import EXIT_USAGE, GpubottleError
from gpubottle.patches import make_patch
from gpubottle.render.json_out import render_json
from gpubottle.render.terminal import render_terminal
from gpubottle.report import Report


def emit(report: Report, stream: IO[str], json_path: str | None, fmt: str = "text") -> None:
    if fmt == "json":
        render_json(report, stream)
    else:
        render_terminal(report, stream, width=None if stream.isatty() else 80)
    if json_path:
        write_json(report, json_path)


def write_patch(report: Report, path: str, stream: IO[str]) -> None:
    """--patch PATH: the report's code changes as a unified diff (gpubottle edits no file)."""
    patch = make_patch(report)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(patch.diff)
    except OSError as exc:
        raise GpubottleError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from exc
    where = report.evidence.run.cwd or os.getcwd()
    if patch.changes:
        print(f"gpubottle: wrote {len(patch.changes)} change(s) to {path}; apply them from {where} "
              f"with: git apply {path} (or patch -p1 < {path})", file=stream)
        for line in patch.changes:
            print(f"  {line}", file=stream)
    else:
        print(f"gpubottle: no change in the code to write to {path}", file=stream)
    for note in patch.notes:
        print(f"  note: {note}", file=stream)


def write_json(report: Report, path: str) -> None:
    if path == "-":
        render_json(report, sys.stdout)
        return
    try:
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        with open(path, "w") as fh:
            render_json(report, fh)
    except OSError as exc:
        raise GpubottleError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from exc
