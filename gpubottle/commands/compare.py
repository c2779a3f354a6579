"""`gpubottle compare BEFORE AFTER`: did the change work, and was it what the first report promised?

Exit codes: 0 compared (whatever the result: it is a report, not a gate); 2 bad usage; 3 bad input
(a missing path, a file that is neither a run directory nor a report, a run with nothing saved).
"""

from __future__ import annotations

import json
import os
import sys

from gpubottle.compare.model import compare_reports
from gpubottle.errors import EXIT_USAGE, GpubottleError
from gpubottle.render.compare import render_compare, render_compare_html
from gpubottle.sources import load_report


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise GpubottleError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from exc


def compare_command(before: str, after: str, json_path: str | None, html_path: str | None) -> int:
    reports = []
    for path in (before, after):
        report = load_report(path)
        if report.evidence.run.kind == "trace":
            raise GpubottleError(f"{path} is a trace, not a run: compare takes two run directories "
                                 "(or their report JSONs) from `gpubottle run`")
        reports.append(report)
    c = compare_reports(reports[0], reports[1], (before, after))
    if json_path != "-":
        render_compare(c, sys.stdout, None if sys.stdout.isatty() else 80)
    if json_path:
        _write(json_path, json.dumps(c.to_contract(), indent=2, default=str) + "\n")
    if html_path:
        import io

        buf = io.StringIO()
        render_compare_html(c, buf)
        _write(html_path, buf.getvalue())
    return 0
