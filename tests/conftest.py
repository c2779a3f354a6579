"""Helpers: run the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "examples"


def gpubottle(*args: str, cwd: Path | None = None, timeout: float = 180,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
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
