"""The waste only a job has, fixed and timed: a 2-rank job (torchrun, gloo on CPU) whose ranks each
iterate the whole dataset gets DistributedSampler with set_epoch, as the report says; the whole
run's wall time is held to the prediction (it must come down by at least half of what was
promised), and the prediction to the measurement, printed side by side."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, SCRIPTS, gpubottle, load_report
from fix_table import write_table

EPOCHS = SCRIPTS / "ranks" / "epochs.py"
RESULTS: list[tuple[str, float, float, float]] = []


@pytest.fixture(scope="module", autouse=True)
def table(request: pytest.FixtureRequest):
    yield
    write_table(request, "a job's fixes applied and timed (wall time, plain torchrun)",
                f"  {'shape':28s} {'before':>7s} {'predicted':>9s} {'measured':>9s}",
                [f"  {shape:28s} {before:6.1f}s {predicted:8.1f}s {measured:8.1f}s"
                 for shape, before, predicted, measured in RESULTS])


def _torchrun(*args: str, tries: int = 3) -> float:
    """The job's wall time under plain torchrun. A rank that aborts in gloo's teardown ("terminate
    called without an active exception", SIGABRT after destroy_process_group: seen once in a
    dozen plain runs with torch 2.13 on 2 cores; twice in a row once, 2026-12-03) is torch's, not
    the timing's: that run is made again, up to twice."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--standalone", str(EPOCHS), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0 and tries > 1 and "terminate called without an active exception" in proc.stderr:
        return _torchrun(*args, tries=tries - 1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return time.perf_counter() - t0


def test_distributed_sampler_on_a_job_whose_ranks_each_read_everything(tmp_path: Path):
    out = tmp_path / "r.json"
    proc = gpubottle("run", "--no-status", "--out", str(tmp_path / "run"), "--json", str(out),
                     "--nproc-per-node", "2", "--torchrun-args", "--standalone", str(EPOCHS), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = load_report(out)
    f = next(f for f in report["findings"] if f["category"] == "unsharded-data")
    fix = f["fixes"][0]
    assert "DistributedSampler" in fix["text"] and fix["where"].startswith("tests/scripts/ranks/epochs.py:")
    run_s = report["source"]["duration_s"]
    assert fix["expected_run_s"] is not None and fix["expected_run_s"] < run_s
    promised = run_s / fix["expected_run_s"]
    # Applied as a user would, timed without gpubottle: the same job before and after.
    before = min(_torchrun(), _torchrun())
    after = min(_torchrun("--sampler"), _torchrun("--sampler"))
    RESULTS.append(("DistributedSampler, 2 ranks", before, before / promised, after))
    assert before - after >= (before - before / promised) / 2, (before, promised, after)
