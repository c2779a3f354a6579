"""Writing a finished report where the user asked: terminal, --json file, the run directory."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

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


def show(text: str, html: str | None, stream: IO[str] | None) -> None:
    """gpubottle.profile()'s report: in a notebook the HTML report inline; elsewhere the terminal
    report on `stream` (default stderr)."""
    shell = _ipython_kernel()
    if shell is not None and stream is None and html is not None:
        from IPython.display import HTML, display

        display(HTML(html))  # type: ignore[no-untyped-call]
        return
    out = stream or sys.stderr
    out.write(text)
    out.flush()


def _ipython_kernel() -> Any:
    """The running IPython kernel (a notebook's, with rich display), None in a terminal or script."""
    ipy = sys.modules.get("IPython")
    if ipy is None:
        return None
    try:
        shell = ipy.get_ipython()
    except Exception:
        return None
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None
