"""examples/gpu/check.py (make gpu-check) on a machine without a GPU: what it can show here."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "examples" / "gpu" / "check.py")
assert _spec is not None and _spec.loader is not None
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def test_it_installs_exactly_the_packages_dependencies():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        assert check.dependencies() == tomllib.load(fh)["project"]["dependencies"]


def test_a_hanging_example_costs_its_row_not_the_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(check, "GRACE_S", 0.5)
    marker = tmp_path / "child.pid"
    # gpubottle would pass SIGINT on; this stand-in ignores it, and leaves a child of its own behind.
    code = ("import os, signal, subprocess, sys, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            f"open({str(marker)!r}, 'w').write(str(c.pid))\n"
            "time.sleep(60)\n")
    t0 = time.monotonic()
    got = check._run([sys.executable, "-c", code], dict(os.environ), timeout=1.5)
    assert got is None and time.monotonic() - t0 < 10
    child = psutil.Process(int(marker.read_text()))  # the whole group went, grandchild included
    deadline = time.monotonic() + 5
    while child.is_running() and child.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    row = check._row("x.py", "compute-bound", tmp_path, None, 1.5)
    assert row["got"] == "timed out after 2 s" and row["exit"] is None


def test_cost_tells_a_steady_cost_from_one_off_stalls():
    # The H200's launch-bound loop: 2.14 ms steps plain, 2.21 under gpubottle, and the throughput
    # lower still by the window's start and stop.
    got = {"plain": {"median": [0.00214, 0.00213, 0.00215], "rate": [469.0, 473.0, 497.0]},
           "window off": {"median": [0.00221, 0.00220, 0.00222], "rate": [440.0, 432.0, 456.0]},
           "default": {"median": [], "rate": []}}
    got["window off"]["account"] = [0.05, 0.04, 0.06]  # each run's own gpubottle line / training
    got["window off"]["start"] = [0.31, 0.28, 0.4]
    plain, off, default = check.cost_rows("launch-bound", got)
    assert "steady_cost" not in plain and "steady_cost" not in default  # no runs: no number
    assert off["steady_cost"] == round(0.00221 / 0.00214 - 1, 4)
    assert off["cost_vs_plain"] == round(1 - 440 / 473, 4)
    assert off["account_says"] == 0.05 and "account_says" not in plain
    assert off["its_start_s"] == 0.31


def test_the_account_share_is_read_from_a_runs_report(tmp_path: Path):
    # gpubottle's start is no cost of the steps the check measures: it is given apart (the H200's
    # GPU-bound loop: 0.0% measured, 6% said when the start was in the share).
    report = tmp_path / "report.json"
    report.write_text('{"account": [{"phase": "train", "seconds": 6.4}, {"phase": "gpubottle", '
                      '"seconds": 0.62, "parts": {"its start (before the script\'s first line)": 0.3, '
                      '"hooks in the script": 0.32}}]}')
    assert check._account_share(report) == (0.05, 0.3)
    old = tmp_path / "old.json"  # a run from before gpubottle's start was in its line
    old.write_text('{"account": [{"phase": "train", "seconds": 6.4}, '
                   '{"phase": "gpubottle", "seconds": 0.32}]}')
    assert check._account_share(old) == (0.05, 0.0)
    assert check._account_share(tmp_path / "missing.json") is None


def test_the_probes_own_measure_is_read_from_a_runs_events(tmp_path: Path):
    # The run's ProbeCost record: per_call, calls, writer, step probes, began, script, hooks, timed.
    events = tmp_path / "events.jsonl"
    events.write_text('["b",1,2]\n["cost",8e-7,6007,0.004,0.03,1.0,1.1,0.042,6000]\n["end","completed",null,2.0]\n')
    assert check._probe_cost(events, 3000) == {"step_probes_us": 10.0, "hook_us": 7.0}
    events.write_text('["cost",6e-6,6007,0.004,0.03]\n')  # a run from before the hooks timed themselves
    assert check._probe_cost(events, 3000) == {"step_probes_us": 10.0}
    assert check._probe_cost(tmp_path / "missing.jsonl", 3000) is None


def test_without_a_gpu_it_says_so_and_exits_2(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys, "argv", ["check.py"])
    assert check.main() == 2


def test_nvidia_ml_py_floor_reads_r535_process_structs():
    """Bindings older than 12.535.77 misread the process list on R535+ drivers (scrambled PIDs and
    memory): the package must not allow them."""
    dep = next(d for d in check.dependencies() if d.startswith("nvidia-ml-py"))
    floor = tuple(int(x) for x in dep.split(">=")[1].split(",")[0].split("."))
    assert floor >= (12, 535, 77)


def _wheel(folder: Path, name: str, files: dict[str, Any]) -> None:
    """A minimal wheel made by hand (what pip needs to install it: a module or a script)."""
    import zipfile

    dist = f"{name.replace('-', '_')}-0.0.1"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n"
    records = {**files, f"{dist}.dist-info/METADATA": meta,
               f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                         "Tag: py3-none-any\n"}
    listed = "".join(f"{k},,\n" for k in records)
    records[f"{dist}.dist-info/RECORD"] = listed + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as z:
        for path, text in records.items():
            z.writestr(path, text)


def _stand_in(tmp_path: Path) -> Path:
    """A Python like the lent machines' (torch there, gpubottle's rarer dependencies not): a venv
    whose site-packages reach this one's through a .pth, less msgspec, py-spy and gpubottle (pip
    too, rather than ensurepip's own copy: ~5 s of the suite's CPU)."""
    import site
    import subprocess

    venv = tmp_path / "standin"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True)
    shim = tmp_path / "shim"
    shim.mkdir()
    ours = Path(next(p for p in site.getsitepackages() if p.endswith("site-packages")))
    for entry in ours.iterdir():
        if not entry.name.lower().startswith(("msgspec", "py_spy", "py-spy", "gpubottle", "__editable__",
                                              "_gpubottle", "easy-install")):
            (shim / entry.name).symlink_to(entry)
    lib = next((venv / "lib").glob("python3*")) / "site-packages"
    (lib / "shim.pth").write_text(str(shim) + "\n")
    return venv / "bin" / "python"


def test_a_stand_in_for_the_gpu_machines_python_gets_past_set_up_to_no_gpu(tmp_path: Path):
    """Run as it is (no venv made from it): what it lacks comes from the wheels into a folder on
    PYTHONPATH, gpubottle imports, and without a GPU the check says so (exit 2)."""
    import subprocess

    python = _stand_in(tmp_path)
    wheels = tmp_path / "whl"
    wheels.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    bare = subprocess.run([str(python), str(ROOT / "examples/gpu/check.py"), "--wheels", str(wheels),
                           "--deps", str(tmp_path / "deps"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert bare.returncode == 3 and "no wheel in" in bare.stdout and "msgspec" in bare.stdout, bare.stdout
    import msgspec  # this machine's own, re-packed as the wheel a GPU machine would be carried

    pkg = Path(msgspec.__file__).parent
    _wheel(wheels, "msgspec", {f"msgspec/{f.relative_to(pkg)}": f.read_bytes()
                               for f in pkg.rglob("*") if f.is_file() and "__pycache__" not in f.parts})
    _wheel(wheels, "py-spy", {"py_spy-0.0.1.data/scripts/py-spy": "#!/bin/sh\nexit 0\n"})
    done = subprocess.run([str(python), str(ROOT / "examples/gpu/check.py"), "--wheels", str(wheels),
                           "--deps", str(tmp_path / "deps"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=180)
    assert "set up (py-spy, msgspec from" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 2 and "no CUDA GPU here" in done.stdout, done.stdout + done.stderr
    assert (tmp_path / "deps" / "msgspec").is_dir() and (tmp_path / "deps" / "bin" / "py-spy").exists()
