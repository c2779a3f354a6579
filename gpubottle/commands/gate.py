"""`gpubottle gate`: check a run or trace against budgets and a baseline, for CI.

Exit codes: 0 every budget passed (or was skipped); 1 a budget failed; 5 no budget failed but one
could not be decided (a difference inside the noise, or a measurement missing), unless
--allow-inconclusive; 2 bad usage; 3 bad input.
"""

from __future__ import annotations

import os
import sys

from gpubottle.errors import EXIT_GATE_FAILED, EXIT_GATE_UNDECIDED, EXIT_USAGE, GpubottleError
from gpubottle.gate.budgets import FAIL, INCONCLUSIVE, check, overall
from gpubottle.gate.config import build_config, read_pyproject
from gpubottle.render.gate import (
    render_github_annotations,
    render_junit,
    render_markdown,
    render_table,
)
from gpubottle.sources import load_report


def _write(path: str, render: object) -> None:
    try:
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        mode = "a" if path == os.environ.get("GITHUB_STEP_SUMMARY") else "w"
        with open(path, mode) as fh:
            render(fh)  # type: ignore[operator]
    except OSError as exc:
        raise GpubottleError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from exc


def gate_command(
    current: str, baseline: str | None, max_regression: str | None, forbid: str | None,
    min_gpu_busy: str | None, max_peak_memory: str | None, junit: str | None, markdown: str | None,
    config: str | None, allow_inconclusive: bool,
) -> int:
    table = read_pyproject(config)
    cfg = build_config(table, max_regression, forbid, min_gpu_busy, max_peak_memory)
    baseline = baseline or table.get("baseline")
    cur = load_report(current)
    base = load_report(str(baseline)) if baseline else None
    results = check(cur, base, cfg)
    if not results:
        raise GpubottleError("no budget to check: give --max-regression, --forbid, --min-gpu-busy or "
                             "--max-peak-memory (or [tool.gpubottle.gate] in pyproject.toml)", EXIT_USAGE)
    verdict = overall(results)
    render_table(results, verdict, sys.stdout, None if sys.stdout.isatty() else 100)
    if junit:
        _write(junit, lambda fh: render_junit(results, fh))
    if markdown:
        _write(markdown, lambda fh: render_markdown(results, verdict, fh))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        render_github_annotations(results, sys.stdout)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            _write(summary, lambda fh: render_markdown(results, verdict, fh))
    if verdict == FAIL:
        return EXIT_GATE_FAILED
    if verdict == INCONCLUSIVE and not allow_inconclusive:
        return EXIT_GATE_UNDECIDED
    return 0
