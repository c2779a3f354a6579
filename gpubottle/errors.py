"""The one error type: every failure gpubottle itself reports carries its exit code.

Exit codes (documented in the README):
  0   success (for `run`: the script succeeded, or was stopped on purpose by --steps/--duration)
  1   `gate`: a budget failed. (`run` passes the script's own status through, 1 included.)
  2   usage: a bad option or argument
  3   bad input: a script that does not exist or is not Python, an unreadable or corrupt trace/run
  4   internal error in gpubottle itself (a bug: please report it)
  5   `gate`: nothing failed, but a budget could not be decided (inside the noise, or unmeasured)
  For `run`, any other status is the script's own; a script killed by a signal makes gpubottle end by
  the same signal.
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_INTERNAL = 4
EXIT_GATE_FAILED = 1
EXIT_GATE_UNDECIDED = 5


class GpubottleError(Exception):
    """A failure to show the user as one clear line, ending the command with `exit_code`."""

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.hint = hint


def failure_code(exc: BaseException) -> int:
    """What a command that raised `exc` exits with, its line said on stderr: a GpubottleError's own
    code and message (and hint), 130 for Ctrl-C, else an internal error (a bug in gpubottle)."""
    if isinstance(exc, GpubottleError):
        print(f"gpubottle: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"gpubottle: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return 130
    print(f"gpubottle: internal error: {exc!r}", file=sys.stderr)
    return EXIT_INTERNAL


def exit_like(returncode: int) -> None:
    """End gpubottle the way the script ended: same status, or the same signal."""
    sys.stdout.flush()
    sys.stderr.flush()
    if returncode < 0:
        sig = -returncode
        try:
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        sys.exit(128 + sig)
    sys.exit(returncode)
