"""py-spy samples on its own clock, not when a core comes free: at a lower priority than the
training, on a machine whose cores the run keeps busy, it got a core when the loop blocked, and a
loop spending 13% of each step in os.fsync read 29-32% fsync in its stacks (twice; 54-97% where
the loop kept both cores busy without a loader). The real CLI on a real loop that times its own
fsync calls."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import SCRIPTS, with_harness
from script_lines import line_of

from gpubottle.collect.stacks import SPY_NICE


def _may_raise_priority() -> bool:
    """This user may give a process a higher priority than its own (root, CAP_SYS_NICE)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        os.setpriority(os.PRIO_PROCESS, child.pid, SPY_NICE)
        return True
    except OSError:
        return False
    finally:
        child.kill()
        child.wait()


def test_py_spy_samples_the_loop_at_its_priority_or_above_and_reads_a_blocking_call_as_timed(
        run_profiled, tmp_path: Path):
    out = tmp_path / "seen.json"
    script = SCRIPTS / "fsync_loop.py"
    proc, report = run_profiled(script, "--steps", "1200", "--out", str(out),
                                opts=("--no-status", "--stack-rate", "20"), threads=None)
    assert proc.returncode == 0 and report is not None, proc.stderr[-2000:]
    seen = json.loads(out.read_text())
    # A py-spy for the script and one for its loader worker, every thread of each at the script's
    # own priority or above (the worker's is started by a thread of gpubottle's: it must not pass
    # a lowered niceness on, which an unprivileged user could not take back).
    spies = {s["target"]: s["nices"] for s in seen["spies"]}
    assert seen["main"] in spies and set(seen["children"]) & set(spies), seen
    want = SPY_NICE if _may_raise_priority() else seen["own_nice"]
    assert all(n == want for t in (seen["main"], *seen["children"]) if t in spies
               for n in spies[t]), (want, seen)
    if want >= seen["own_nice"]:
        return  # (at the training's own priority py-spy still waits for a core: 38-53% fsync)
    # The blocking call's share of the main thread's samples in the measured steps, against the
    # loop's own clock.
    line = line_of(script, "os.fsync(")
    named = [o["share"] for o in report["evidence"]["stacks"]["main_outside_model"]
             if o["location"].endswith(f"fsync_loop.py:{line}")]
    assert abs((named[0] if named else 0.0) - seen["fsync_share"]) <= 0.1, (named, seen["fsync_share"])


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to run gpubottle as another, unprivileged user")
def test_an_unprivileged_user_gets_py_spy_at_the_trainings_own_priority():
    """Run by a user who may not raise a priority (nobody): py-spy for the script and for its loader
    worker at the script's own niceness, never the nice 10 a lowered gpubottle thread would pass on
    to the workers' py-spy (which such a user could not take back)."""
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE",
           "PYTHONPATH": with_harness(os.environ.get("PYTHONPATH"))}
    if subprocess.run([*as_nobody, sys.executable, "-c", "import gpubottle, torch"], env=env,
                      cwd="/", capture_output=True, timeout=60).returncode != 0:
        pytest.skip("the checkout or its venv is not readable by nobody (a private folder)")
    # (a folder of its own under /tmp: pytest's are the owner's alone)
    with tempfile.TemporaryDirectory(prefix="gpubottle-nobody-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o777)
        out = folder / "seen.json"
        proc = subprocess.run(
            [*as_nobody, sys.executable, "-m", "gpubottle", "run", "--no-status", "--out",
             str(folder / "run"), str(SCRIPTS / "fsync_loop.py"), "--steps", "600", "--out", str(out)],
            cwd=tmp, capture_output=True, text=True, timeout=180, env={**env, "HOME": tmp})
        assert proc.returncode == 0, proc.stderr[-2000:]
        seen = json.loads(out.read_text())
    spies = {s["target"]: s["nices"] for s in seen["spies"]}
    assert seen["main"] in spies and set(seen["children"]) & set(spies), seen
    assert all(n == seen["own_nice"] for t in (seen["main"], *seen["children"]) if t in spies
               for n in spies[t]), seen
