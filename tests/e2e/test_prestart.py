"""The script's interpreter started beside the options' parse (gpubottle/launch/prestart.py): the
script runs in it as it would in one started after, and a launch it cannot serve gets a new one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, SCRIPTS, gpubottle, with_harness

from gpubottle.launch import prestart
from gpubottle.options import TRIAL_ENV


def _shown(stdout: str) -> dict[str, object]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("{"))
    shown: dict[str, object] = json.loads(line)
    return shown


@pytest.mark.parametrize("started_first", [True, False])
def test_the_script_sees_the_same_process_either_way(tmp_path: Path, started_first: bool):
    """Its argv, working directory and environment as the launch made them (the user's variables
    in, gpubottle's own settings and a trial's change out), in the interpreter started first unless
    that is turned off."""
    env = {"MY_SETTING": "kept", TRIAL_ENV: "{}"}
    if not started_first:
        env[prestart.OFF_ENV] = "1"
    proc = gpubottle("run", "--out", str(tmp_path / "r"), str(SCRIPTS / "show_process.py"),
                     "MY_SETTING", "GPUBOTTLE_CHILD", TRIAL_ENV, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = _shown(proc.stdout)
    assert shown["argv"] == [str(SCRIPTS / "show_process.py"), "MY_SETTING", "GPUBOTTLE_CHILD", TRIAL_ENV]
    assert shown["cwd"] == str(tmp_path)
    assert shown["env"] == {"MY_SETTING": "kept", "GPUBOTTLE_CHILD": None, TRIAL_ENV: None}
    code = " ".join(shown["cmdline"])  # type: ignore[arg-type]
    assert ("launch.prestart" in code) is started_first, code
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("started_first", [True, False])
def test_standard_input_reaches_the_script_either_way(tmp_path: Path, started_first: bool):
    env = {**os.environ, "PYTHONPATH": with_harness(os.environ.get("PYTHONPATH"))}
    if not started_first:
        env[prestart.OFF_ENV] = "1"
    proc = subprocess.run([sys.executable, "-m", "gpubottle", "run", "--out", str(tmp_path / "r"),
                           str(SCRIPTS / "echo_stdin.py")], input="piped in\n", capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("PIPED IN\n"), proc.stdout


def test_a_launch_that_changes_a_start_time_variable_gets_a_new_interpreter(capfd):
    prestart.spawn(["run"])
    waiting = prestart.take()
    assert waiting is not None and prestart.take() is None
    assert waiting.go({**waiting.env, "PYTHONHASHSEED": "7"}, ["x.py"], None) is None
    assert waiting.popen.returncode == 0  # ended, reaped
    assert capfd.readouterr() == ("", "")


def test_the_waiting_interpreter_leaves_silently_when_no_launch_comes(capfd):
    """gpubottle run ended before its launch (--help, a usage error), or Ctrl-C while it parsed:
    the terminal's Ctrl-C reaches the waiting child too, which ignores it at any point of its start
    (it printed Python's KeyboardInterrupt traceback, or 'Fatal Python error: init_import_site', when
    it came during the child's imports) and leaves when gpubottle run, ended by it, closes the
    socket. gpubottle run's own SIGINT is as it was (in a pytest-xdist worker that may be SIG_IGN:
    the worker's, or what an earlier test there left)."""
    before = signal.getsignal(signal.SIGINT)
    prestart.spawn(["run"])
    waiting = prestart.take()
    assert waiting is not None
    waiting.drop()
    assert waiting.popen.returncode == 0
    for delay in (0.0, 0.02, 0.05, 0.1, 0.3):  # in its interpreter's start, its imports, or waiting
        prestart.spawn(["run"])
        waiting = prestart.take()
        assert waiting is not None and signal.getsignal(signal.SIGINT) is before
        time.sleep(delay)
        os.kill(waiting.popen.pid, signal.SIGINT)
        time.sleep(0.2)
        assert waiting.popen.poll() is None, delay
        waiting.drop()
        assert waiting.popen.returncode == 0, delay
    assert capfd.readouterr() == ("", "")


def test_only_a_run_starts_one():
    for argv in (["report", "x.json"], ["gate"], []):
        prestart.spawn(argv)
        assert prestart.take() is None
