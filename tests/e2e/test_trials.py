"""`gpubottle run --try-fixes` through the CLI: the settings applied inside the script and timed (the
plan, statistics and table in-process: tests/unit/trials/test_trial_plan.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import SCRIPTS, gpubottle

FIXES = SCRIPTS / "fixes"


def test_without_a_terminal_or_yes_the_trials_are_skipped(tmp_path: Path):
    proc = gpubottle("run", "--no-status", "--no-stacks", "--out", str(tmp_path / "run"),
                     "--try-fixes", str(FIXES / "remote_reads.py"), "--samples", "160",
                     timeout=120, env={"OMP_WAIT_POLICY": "PASSIVE"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "written again" in proc.stderr and "add --yes" in proc.stderr
    assert "Measured fixes" not in proc.stderr


def test_bad_trial_options_are_usage_errors_before_anything_runs(tmp_path: Path):
    for bad in (("--trial-steps", "3"), ("--trial-rounds", "0"), ("--trial-seconds", "-1")):
        proc = gpubottle("run", "--out", str(tmp_path / "run"), "--try-fixes", *bad,
                         str(FIXES / "threads.py"), timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert not (tmp_path / "run").exists()


