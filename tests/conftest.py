"""Helpers: run the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "examples"


# At most CPU_SLOTS training runs at a time across the suite's test processes (make test runs
# three): runs whose verdicts depend on the CPU they get never share the 2 cores three ways, while
# tests marked `light` (runs that mostly sleep for a fixed time: leaks, durations) run beside them.
CPU_SLOTS = 2
_slot_dir: Path | None = None
_light = False


def pytest_configure(config: pytest.Config) -> None:
    global _slot_dir
    uid = getattr(config, "workerinput", {}).get("testrunuid")
    if uid:  # under xdist: one folder of lock files per test run, shared by its workers
        _slot_dir = Path(tempfile.gettempdir()) / f"gpubottle-test-slots-{uid}"
        _slot_dir.mkdir(exist_ok=True)


@pytest.fixture(autouse=True)
def _slot_kind(request: pytest.FixtureRequest) -> Iterator[None]:
    """`light`: runs without a slot; `exclusive`: holds every slot for the whole test (a two-rank
    job, or a test comparing two runs' verdicts: nothing heavy runs beside it)."""
    global _light
    if request.node.get_closest_marker("exclusive") is not None and _slot_dir is not None:
        held = []
        for i in range(CPU_SLOTS):  # in order, blocking: exclusive tests never deadlock each other
            fh = open(_slot_dir / f"slot{i}", "a+")  # noqa: SIM115 - closed below
            fcntl.flock(fh, fcntl.LOCK_EX)
            held.append(fh)
        _light = True  # the runs inside take no slot of their own
        try:
            yield
        finally:
            _light = False
            for fh in held:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
        return
    _light = request.node.get_closest_marker("light") is not None
    yield
    _light = False


@contextlib.contextmanager
def cpu_slot() -> Iterator[None]:
    """Hold one of the CPU_SLOTS while a training run goes (a no-op for light tests, or without xdist)."""
    if _light or _slot_dir is None:
        yield
        return
    held = None
    while held is None:
        for i in range(CPU_SLOTS):
            fh = open(_slot_dir / f"slot{i}", "a+")  # noqa: SIM115 - closed below
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            held = fh
            break
        else:
            time.sleep(0.05)
    try:
        yield
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        held.close()


def gpubottle(*args: str, cwd: Path | None = None, timeout: float = 180,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    with cpu_slot():
        return subprocess.run(
            [sys.executable, "-m", "gpubottle", *args],
            cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout, env=full_env,
        )


def load_report(path: Path) -> dict[str, Any]:
    with open(path) as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@pytest.fixture
def run_profiled(tmp_path: Path):
    """Run a script under `gpubottle run`; returns (completed process, report dict or None)."""

    def _run(script: Path, *script_args: str, opts: tuple[str, ...] = (), timeout: float = 180,
             env: dict[str, str] | None = None, cwd: Path | None = None):
        out = tmp_path / "run"
        report = tmp_path / "report.json"
        # torch's OpenMP threads spin after every parallel op by default: a third of the suite's CPU
        # on 2 cores, taken from the other tests' runs. (tests/check_fixes keep the default spin.)
        proc = gpubottle("run", "--out", str(out), "--json", str(report), *opts, str(script),
                         *script_args, timeout=timeout, env={"OMP_WAIT_POLICY": "PASSIVE", **(env or {})},
                         cwd=cwd)
        data = load_report(report) if report.exists() else None
        if data is not None and data.get("account") and data["source"].get("duration_s"):
            # Every run the suite makes: its account sums to its wall time (issue: the whole run).
            total, wall = sum(e["seconds"] for e in data["account"]), data["source"]["duration_s"]
            assert abs(total - wall) <= 0.05 * wall, (total, wall, data["account"])
        return proc, data

    return _run


@contextlib.contextmanager
def busy_programs(n: int) -> Iterator[None]:
    """Other programs' load, made on purpose: n processes spinning on a core each (a test that uses
    it is `exclusive`, so the suite's own runs do not share the machine with it)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def machine_loaded(report: dict[str, Any]) -> bool:
    """Other programs (the suite's own parallel runs too) took a good part of the cores during this
    run: cpu-contention named, or half a core or more used outside the run."""
    named = any(f["category"] == "cpu-contention" and f["severity"] != "info" for f in report["findings"])
    outside = ((report.get("evidence") or {}).get("cpu") or {}).get("outside_cores") or 0.0
    return named or outside >= 0.5


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests by kind: `-m unit` runs tests/unit/ alone (seconds), `-m e2e` the rest."""
    unit = Path(__file__).resolve().parent / "unit"
    for item in items:
        item.add_marker("unit" if Path(str(item.fspath)).is_relative_to(unit) else "e2e")
