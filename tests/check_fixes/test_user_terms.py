"""Fixes said in the user's terms, applied in those terms and timed (issue 24): a worker count from
an OmegaConf config, changed by the override the report prints; a worker count from an argparse
option, changed by applying the report's --patch to a copy of the script with `patch -p1`. The
run's wall time must come down by at least half of what the fix promised."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import SCRIPTS, gpubottle, load_report

KNOBS = SCRIPTS / "knobs"
RESULTS: list[tuple[str, str, float, float, float]] = []


@pytest.fixture(scope="module", autouse=True)
def table(request: pytest.FixtureRequest):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not RESULTS:
        return
    reporter.write_line("")
    reporter.write_line("fixes applied in the user's terms and timed (wall time launch to exit)")
    reporter.write_line(f"  {'form':22s} {'change':26s} {'before':>7s} {'predicted':>9s} {'measured':>9s}")
    for form, change, before, predicted, measured in RESULTS:
        reporter.write_line(f"  {form:22s} {change[:26]:26s} {before:6.1f}s {predicted:8.1f}s "
                            f"{measured:8.1f}s")


def _run(tmp: Path, name: str, script: Path, *args: str, cwd: Path | None = None) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    proc = gpubottle("run", "--no-status", "--out", str(tmp / name), "--json", str(out), str(script), *args,
                     timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load_report(out)


def _worker_fix(report: dict[str, Any]) -> dict[str, Any]:
    return next(x for f in report["findings"] for x in f["fixes"] if "num_workers" in x["change"])


def _held(form: str, before: dict[str, Any], after: dict[str, Any], fix: dict[str, Any]) -> None:
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    predicted = fix["expected_run_s"]
    RESULTS.append((form, f"num_workers={fix['change']['num_workers'][1]}", b, predicted, a))
    assert predicted < b
    assert b - a >= (b - predicted) / 2, (form, b, predicted, a)


def test_an_omegaconf_override(tmp_path: Path):
    script = KNOBS / "omegaconf_config.py"
    before = _run(tmp_path, "before", script)
    fix = _worker_fix(before)
    n = fix["change"]["num_workers"][1]
    assert fix["how"].startswith(f"override data.num_workers={n}"), fix
    after = _run(tmp_path, "after", script, f"data.num_workers={n}")
    _held("OmegaConf override", before, after, fix)


def test_a_patch_applied_with_patch_p1(tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(KNOBS / "workers_option.py", work / "train.py")
    before_out = tmp_path / "before.json"
    proc = gpubottle("run", "--no-status", "--out", str(tmp_path / "before"), "--json", str(before_out),
                     "--patch", str(tmp_path / "fix.diff"), "train.py", timeout=300, cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    before = load_report(before_out)
    fix = _worker_fix(before)
    applied = subprocess.run(["patch", "-p1", "-i", str(tmp_path / "fix.diff")], cwd=work,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = _run(tmp_path, "after", work / "train.py", cwd=work)  # as the user runs it: no option
    assert after["evidence"]["loaders"][0]["num_workers"] == fix["change"]["num_workers"][1]
    _held("patch -p1", before, after, fix)
