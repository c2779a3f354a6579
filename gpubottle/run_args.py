"""`gpubottle run`'s options read without typer, for the plain spellings (issue 32: gpubottle's start
is the run's cost). Importing typer and building its command took ~50-80 ms of CPU before every
run's launch, on the core the script's interpreter needed (a one-core run: 0.17 s of the
supervisor's CPU before the script's `import torch` was done, a third of it typer's).

Read here: `run [OPTIONS] SCRIPT [ARGS...]` and `run [OPTIONS] -m MODULE [ARGS...]`, with each of
run's own options as `--name VALUE`, `--name=VALUE` or a flag, the first word that is not an option
(or `--`) starting the script's. Anything else (--help, an unknown or misspelled option, a short
option with its value attached, a value that is not a plain number, no script) is left to typer:
its messages, checks and help stand as they were. tests/unit/commands/test_run_args.py holds these
tables to typer's own definition of `run` (cli.py) and both readings to the same RunOptions.
"""

from __future__ import annotations

import shlex
from typing import Any, Callable

from gpubottle.options import RunOptions
from gpubottle.plain_options import to_float, to_int

# Each option that takes a value: RunOptions' field and how its text becomes the value.
VALUED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "--out": ("out", str), "-o": ("out", str),
    "--json": ("json_path", str), "--html": ("html_path", str), "--patch": ("patch_path", str),
    "--steps": ("steps", to_int), "--duration": ("duration", to_float),
    "--sample-hz": ("sample_hz", to_float), "--stack-rate": ("stack_rate", to_int),
    "--profile-window": ("window", str),
    "--window-start": ("window_start", to_int), "--window-steps": ("window_steps", to_int),
    "--trial-steps": ("trial_steps", to_int), "--trial-seconds": ("trial_seconds", to_float),
    "--trial-rounds": ("trial_rounds", to_int),
    "--nproc-per-node": ("nproc_per_node", to_int),
    "--torchrun-args": ("torchrun_args", shlex.split),
}
# Each flag: the field it sets, and to what.
FLAGS: dict[str, tuple[str, bool]] = {
    "--no-status": ("live_status", False), "--no-stacks": ("stacks", False), "--no-gpu": ("gpu", False),
    "--memory-snapshot": ("memory_snapshot", True), "--try-fixes": ("try_fixes", True),
    "--yes": ("yes", True), "-y": ("yes", True),
}
MODULE = ("-m", "--module")


def parse_run(argv: list[str]) -> RunOptions | None:
    """`run`'s options from the words after `run`, or None where typer should read them."""
    fields: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return _target(fields, None, argv[i + 1:])
        if not word.startswith("-") or word == "-":
            return _target(fields, None, argv[i:])
        name, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in MODULE:
            # As python reads -m: every word after the module's name is the module's.
            if eq:
                return _target(fields, attached, argv[i + 1:]) if attached else None
            return _target(fields, argv[i + 1], argv[i + 2:]) if i + 1 < len(argv) else None
        if name in FLAGS and not eq:
            field, value = FLAGS[name]
            fields[field] = value
            i += 1
            continue
        if name not in VALUED:
            return None  # --help, an unknown option, -ovalue, -yo: typer's to read (or refuse)
        if not eq and i + 1 >= len(argv):
            return None  # a value missing: typer says so
        text = attached if eq else argv[i + 1]
        field, convert = VALUED[name]
        try:
            fields[field] = convert(text)
        except ValueError:
            return None  # not a plain number, or unbalanced quotes: typer decides
        i += 1 if eq else 2
    return None  # no script: typer shows run's help


def _target(fields: dict[str, Any], module: str | None, rest: list[str]) -> RunOptions | None:
    if module is not None:
        return RunOptions(module=module, args=list(rest), **fields)
    if not rest or (rest[0].startswith("-") and rest[0] != "-"):
        return None  # (after `--`: typer's "no such option", as before)
    return RunOptions(script=rest[0], args=list(rest[1:]), **fields)
