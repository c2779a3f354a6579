"""The table `make check-fixes` prints after a module of applied fixes: predicted beside measured."""

from __future__ import annotations

import pytest


def write_table(request: pytest.FixtureRequest, title: str, header: str, lines: list[str]) -> None:
    """`lines` under `title` and `header` on pytest's terminal (nothing when there are none)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not lines:
        return
    reporter.write_line("")
    reporter.write_line(title)
    reporter.write_line(header)
    for line in lines:
        reporter.write_line(line)
