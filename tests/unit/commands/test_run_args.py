"""`gpubottle run`'s options read without typer (run_args.py): its tables held to typer's own
definition of `run`, both readings to the same RunOptions, the rest left to typer, and the real
command's start without typer imported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.main import get_command

from gpubottle import cli
from gpubottle.options import RunOptions
from gpubottle.plain_options import to_float, to_int
from gpubottle.run_args import FLAGS, MODULE, VALUED, parse_run

_KIND = {to_int: int, to_float: float}  # (str and shlex.split: a str)


def test_the_tables_are_typers_options_of_run():
    command = get_command(cli.app).commands["run"]  # type: ignore[attr-defined]
    names: set[str] = set()
    for p in command.params:
        if p.param_type_name != "option":
            continue
        spelled = set(p.opts) | set(p.secondary_opts)
        names |= spelled
        if p.name == "module":
            assert spelled == set(MODULE)
        elif p.is_flag:
            assert spelled <= set(FLAGS), p.name
        else:
            assert spelled <= set(VALUED), p.name
            for name in spelled:
                convert = VALUED[name][1]
                annotation = p.type_descriptor.annotation  # (this typer's own parameter record)
                assert _KIND.get(convert, str) is annotation, (name, annotation)
    assert names == set(FLAGS) | set(VALUED) | set(MODULE)


def _typers(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> RunOptions | None:
    seen: list[RunOptions] = []
    monkeypatch.setattr("gpubottle.commands.run.run_command", lambda o: seen.append(o) or 0)
    code = cli.main(["run", *argv])
    assert code == 0 or not seen
    return seen[0] if seen else None


@pytest.mark.parametrize("argv", [
    ["train.py"],
    ["train.py", "--lr", "1", "--out", "x", "-y"],  # the script's own, though spelled like ours
    ["--out", "d", "--steps", "5", "--no-stacks", "-y", "train.py", "a"],
    ["--out=d", "--duration=2.5", "--steps=3", "train.py"],
    ["-o", "d", "--sample-hz", "4", "--stack-rate", "20", "--profile-window", "on",
     "--window-start", "3", "--window-steps", "2", "train.py"],
    ["--no-status", "--no-gpu", "--memory-snapshot", "--try-fixes", "--trial-steps", "30",
     "--trial-seconds", "9.5", "--trial-rounds", "2", "--yes", "t.py"],
    ["--nproc-per-node", "2", "--torchrun-args", "--nnodes 2 --node-rank 0", "t.py", "--epochs", "1"],
    ["--json", "r.json", "--html", "r.html", "--patch", "p.diff", "t.py"],
    ["-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py", "--lr", "1"],
    ["--out", "d", "-m", "pkg.mod"],
    ["--module=pkg.mod", "x", "--steps", "2"],
    ["--module", "pkg.mod", "--", "x"],
    ["--", "train.py", "a"],
    ["--out", "-x", "t.py"],  # a value that starts with a dash is still the value
    ["-", "a"],
    ["--steps", "5", "--steps", "7", "t.py"],  # the last one
    ["--sample-hz", "1e1", "--duration", ".5", "--steps", "+3", "t.py"],
])
def test_both_readings_agree(argv: list[str], monkeypatch: pytest.MonkeyPatch):
    quick = parse_run(argv)
    assert quick is not None
    assert quick == _typers(argv, monkeypatch)


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["--bogus", "t.py"], ["-odir", "t.py"], ["-yo", "d", "t.py"],
    ["--steps", "five", "t.py"], ["--steps", "3.0", "t.py"], ["--steps", " 5", "t.py"], ["--out"],
    ["--no-stacks=1", "t.py"], ["--torchrun-args", "'unbalanced", "t.py"], ["--", "-x.py"], ["-m"],
    ["--module="], ["--out", "d"], ["-mpkg.mod"],
])
def test_anything_else_is_typers(argv: list[str]):
    assert parse_run(argv) is None


def test_a_run_starts_without_typer(tmp_path):
    """The real command: a plainly spelled run reaches run_command with typer never imported (its
    ~50 ms of CPU, before the launch, on the script's core); a misspelled one still gets typer's
    message and exit code 2."""
    code = ("import sys; import gpubottle.commands.run as r\n"
            "r.run_command = lambda o: print('typer' in sys.modules, o.out, o.steps, o.args) or 7\n"
            "from gpubottle.command import entry; entry()\n")
    env = dict(os.environ, GPUBOTTLE_NO_PRESTART="1")
    done = subprocess.run([sys.executable, "-c", code, "run", "--out", "d", "--steps", "3", "t.py", "a"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (7, "False d 3 ['a']\n"), done.stderr
    done = subprocess.run([sys.executable, "-c", code, "run", "--stepz", "3", "t.py"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--stepz" in done.stderr and done.stdout == ""
