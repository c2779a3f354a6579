"""The script's process made beside the options' parse (gpubottle/launch/prestart.py): forked from
`gpubottle run` there, or an interpreter started there where a fork is not safe; the script runs
in it as it would in one started after, and a launch it cannot serve gets a new one."""

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
    # Made first: forked from `gpubottle run` (its command line); else started by the launch.
    assert ("-m gpubottle run --out" in code) is started_first, code
    assert ("gpubottle.launch.bootstrap" in code) is not started_first, code
    assert "Traceback" not in proc.stderr


def test_the_forked_script_starts_with_gpubottles_objects_out_of_its_collections(tmp_path: Path):
    """Forked from `gpubottle run`, the script's process holds the supervisor's objects too: frozen
    before the script's first line, its garbage collections walk only what the script makes (they
    walked ~20k objects more, and `import torch` made one full collection more than plain python)."""
    probe = tmp_path / "objects.py"
    probe.write_text("import gc\nprint('tracked', len(gc.get_objects()), 'frozen', gc.get_freeze_count())\n")
    plain = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, check=True)
    proc = gpubottle("run", "--out", str(tmp_path / "r"), str(probe), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours, theirs = (ln.split() for ln in (proc.stdout.strip(), plain.stdout.strip()))
    assert int(ours[3]) > int(theirs[1]) > int(ours[1]), (ours, theirs)


def test_a_forked_scripts_traceback_is_its_own_under_the_console_script(tmp_path: Path):
    """`gpubottle` as installed (a console script, whose frame is not in gpubottle's package) is at
    the bottom of the forked process's stack: the traceback shown starts at the script's frame."""
    command = Path(sys.executable).with_name("gpubottle")
    assert command.exists(), command  # installed by `make test`'s venv
    script = tmp_path / "boom.py"
    script.write_text("def f():\n    raise ValueError('boom')\n\n\nf()\n")
    env = {**os.environ, "PYTHONPATH": with_harness(os.environ.get("PYTHONPATH"))}
    proc = subprocess.run([str(command), "run", "--no-status", "--out", str(tmp_path / "r"), str(script)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    tb = proc.stderr[proc.stderr.index("Traceback (most recent call last):"):]
    frames = [ln for ln in tb.splitlines() if ln.startswith('  File "')]
    assert len(frames) == 2 and all("boom.py" in f for f in frames), tb[:2000]
    assert "ValueError: boom" in tb


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
