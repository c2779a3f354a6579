"""The `gpubottle` command (and `python -m gpubottle`): its first statement starts the script's
interpreter for a `run` (launch/prestart.py) before the options are read; a `run` whose options
are all plainly spelled is read without typer (run_args.py), anything else by the CLI."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpubottle.options import RunOptions


def entry() -> None:
    from gpubottle.launch import prestart

    argv = sys.argv[1:]
    prestart.spawn(argv, fork=True)
    if argv[:1] == ["run"]:
        from gpubottle.run_args import parse_run

        options = parse_run(argv[1:])
        if options is not None:
            from gpubottle.errors import exit_like

            exit_like(_run(options))
            return
    from gpubottle.cli import entry as cli_entry

    cli_entry()


def _run(options: RunOptions) -> int:
    from gpubottle.errors import failure_code

    try:
        from gpubottle.commands.run import run_command

        return run_command(options)
    except (Exception, KeyboardInterrupt) as exc:
        return failure_code(exc)
