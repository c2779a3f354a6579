"""gpubottle.profile() in a plain script, through the real process: the probes in the script's own
process (torch imported before), a watcher process sampling it from outside, the same evidence,
rules and run directory as `gpubottle run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import (
    EXAMPLES,
    ROOT,
    SCRIPTS,
    cpu_slot,
    gpubottle_here,
    load_report,
    machine_loaded,
    with_harness,
)

from gpubottle import vocabulary as v

API = SCRIPTS / "api"


def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": with_harness(str(ROOT)), "OMP_WAIT_POLICY": "PASSIVE"}
    with cpu_slot():
        return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=180, env=env)


def _results(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULTS "))
    return list(json.loads(line[len("RESULTS "):]))


def test_profile_twice_in_one_process_gives_run_s_verdict(tmp_path: Path):
    proc = _python(str(API / "profile_example.py"), str(EXAMPLES / "data_starved.py"), str(tmp_path),
                   "--twice", "--", "--epochs", "1", "--samples", "512", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, second = _results(proc)
    # `gpubottle run examples/data_starved.py` is data-starved (tests/e2e/test_verdicts.py): so here,
    # on the first use and on the second (probes installed once, re-targeted).
    assert first["primary"] == second["primary"] == v.DATA_STARVED
    assert "gpubottle verdict: DATA-STARVED" in proc.stderr  # shown once, for the first use
    for use in (first, second):
        rep = load_report(Path(use["run_dir"]) / "report.json")
        ev = rep["evidence"]
        assert ev["loaders"][0]["site"].endswith("data_starved.py:43")
        assert len(ev["steps"]["durations_s"]) == 16
        assert ev["run"]["collectors"]["py-spy"]["ok"], ev["run"]["collectors"]
        if not machine_loaded(rep):  # (beside the suite's other runs, once: 1 sample of a 2-s run)
            assert (ev.get("stacks") or {}).get("samples_main", 0) > 5
        total = sum(e["seconds"] for e in rep["account"])
        assert abs(total - rep["source"]["duration_s"]) <= 0.05 * rep["source"]["duration_s"]
        # The watcher and its py-spy are the profiled process's children, never the run's.
        records = [json.loads(x) for x in (Path(use["run_dir"]) / "samples.jsonl").read_text().splitlines()]
        tree = " ".join(str(r[3:5]) for r in records if r[0] == "p")  # ProcSeen: name, command line
        assert "gpubottle.launch.watch" not in tree and "py-spy" not in tree, tree
    # `report` and `gate` read its run directory.
    again = gpubottle_here("report", first["run_dir"])
    assert again.returncode == 0 and "DATA-STARVED" in again.stdout
    gate = gpubottle_here("gate", second["run_dir"], "--baseline", first["run_dir"], "--max-regression", "50")
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_compute_bound_example_under_profile(tmp_path: Path):
    proc = _python(str(API / "profile_example.py"), str(EXAMPLES / "compute_bound.py"), str(tmp_path),
                   "--", "--steps", "40", "--width", "512", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _results(proc)[0]["primary"] == v.COMPUTE_BOUND
    # This machine's CPU read live (tests/e2e/test_verdicts.py reads a recorded run's): bfloat16
    # autocast is advised as the CPU allows it (native, emulated, or unknown).
    from gpubottle.collect.system import cpu_bf16

    report = load_report(tmp_path / "use0" / "report.json")
    assert report["evidence"]["cpu"]["bf16"] == cpu_bf16()


def test_the_block_s_exception_and_ctrl_c_go_on_unchanged_with_a_report(tmp_path: Path):
    fails = _python(str(API / "profile_fails.py"), str(tmp_path / "a"), "value-error", cwd=tmp_path)
    assert fails.returncode == 1
    # Python's own traceback: the user's frame and the error, no gpubottle frame in between.
    assert fails.stderr.splitlines()[-1] == "ValueError: bad batch at step 20"
    assert "gpubottle" not in fails.stderr.replace("gpubottle.profile", "")
    assert "REPORT" in fails.stdout and "failed" in fails.stdout
    rep = load_report(tmp_path / "a" / "report.json")
    assert rep["evidence"]["run"]["exception"].startswith("ValueError: bad batch")
    stop = _python(str(API / "profile_fails.py"), str(tmp_path / "b"), "interrupt", cwd=tmp_path)
    assert stop.returncode in (-2, 130) and stop.stderr.splitlines()[-1] == "KeyboardInterrupt"  # as python
    assert "interrupted" in stop.stdout
    assert load_report(tmp_path / "b" / "report.json")["source"]["stop_reason"] == "interrupted"
