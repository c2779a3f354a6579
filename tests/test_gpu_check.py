"""examples/gpu/check.py (make gpu-check) on a machine without a GPU: what it can show here."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import psutil
import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
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


def test_without_a_gpu_it_says_so_and_exits_2(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys, "argv", ["check.py"])
    assert check.main() == 2


def test_nvidia_ml_py_floor_reads_r535_process_structs():
    """Bindings older than 12.535.77 misread the process list on R535+ drivers (scrambled PIDs and
    memory): the package must not allow them."""
    dep = next(d for d in check.dependencies() if d.startswith("nvidia-ml-py"))
    floor = tuple(int(x) for x in dep.split(">=")[1].split(",")[0].split("."))
    assert floor >= (12, 535, 77)
