"""The `gpubottle` command (and `python -m gpubottle`): its first statement starts the script's
interpreter for a `run` (launch/prestart.py) before the options are read, then the CLI."""

from __future__ import annotations

import sys


def entry() -> None:
    from gpubottle.launch import prestart

    prestart.spawn(sys.argv[1:])
    from gpubottle.cli import entry as cli_entry

    cli_entry()
