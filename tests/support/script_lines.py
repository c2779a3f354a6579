"""Where a line of a script is, for tests that check a finding points at it: the line numbers move
whenever a test script is edited, so tests find them by the line's text."""

from __future__ import annotations

from pathlib import Path


def line_of(path: Path, text: str, *, whole: bool = False, start: bool = False) -> int:
    """The 1-based number of the first line of `path` that contains `text`; with whole=True, the
    first whose text without its indent is `text`; with start=True, the first that starts with it,
    its indent left out unless `text` has one."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if whole:
            found = line.strip() == text
        elif start:
            found = line.startswith(text) or line.lstrip().startswith(text)
        else:
            found = text in line
        if found:
            return number
    raise AssertionError(f"no line of {path} {'is' if whole else 'starts with' if start else 'has'} {text!r}")
