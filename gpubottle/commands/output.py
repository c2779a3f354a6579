"""Writing a finished report where the user asked: terminal, --json file, the run directory."""

from __future__ import annotations

import os
import sys
from typing import IO

from gpubottle.errors import EXIT_USAGE, GpubottleError
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
