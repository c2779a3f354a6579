"""A script that raises shows the traceback `python train.py` would: from the script's own frames,
without the bootstrap's and runpy's in front of it. The whole traceback (gpubottle's frames too, for
gpubottle's own bugs) is kept in the run directory."""

from __future__ import annotations

import os
import sys
import traceback
from types import TracebackType

from gpubottle.probes.sites import OWN_DIR

_OWN = OWN_DIR + os.sep
# The `gpubottle` command's own file, where the script's process was forked from it (its frame is
# then under the script's: launch/prestart.py).
_launcher: set[str] = set()


def forked_from(filename: str | None) -> None:
    """The script's process was forked from the `gpubottle` command in `filename`."""
    if filename:
        _launcher.add(filename)


def _ours(filename: str) -> bool:
    """gpubottle's frames, runpy's and the bootstrap's `-c` line: what plain python has not."""
    return (filename.startswith(_OWN) or filename in ("<string>", "<frozen runpy>") or filename in _launcher
            or filename.endswith(os.sep + "runpy.py"))


def trimmed(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame that is not ours (None when all are: a syntax error in
    the script, which Python reports with no frames at all)."""
    while tb is not None and _ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def install(full_path: str) -> None:
    """Print uncaught exceptions as plain python would, and keep the full one at `full_path`."""
    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        try:
            with open(full_path, "w") as fh:
                fh.write("".join(traceback.format_exception(kind, exc, tb)))
        except OSError:
            pass
        try:
            sys.stderr.write("".join(traceback.format_exception(kind, exc, trimmed(tb))))
            sys.stderr.flush()
        except Exception:  # never lose the script's error to our printing: Python's own then
            sys.__excepthook__(kind, exc, tb)

    sys.excepthook = hook
