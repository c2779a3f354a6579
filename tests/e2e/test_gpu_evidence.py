"""GPU evidence without a GPU, through the CLI: NVML and CUDA paths through fakes with the same
interface (the throttled GPU's run recorded: tests/runs/; the fake NVML's live path through a run:
test_nvml_devices.py), the profiler window for real (on CPU), and
the report when there is no GPU at all (the probes in-process: tests/unit/probes/test_gpu_probes.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import SCRIPTS, SUPPORT, gpubottle_here


def test_run_with_a_throttled_fake_gpu(replayed_run, tmp_path: Path):
    spec = {"mode": "ok", "devices": [{"name": "Fake H100", "util": 97, "throttle": 0x40, "temp": 91,
                                       "proc_mem": 3 << 30, "mem_used": 4 << 30, "mem_total": 80 << 30}]}
    env = {"GPUBOTTLE_NVML_BACKEND": "fake_pynvml", "FAKE_NVML": json.dumps(spec),
           "PYTHONPATH": str(SUPPORT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc, rep = replayed_run(SCRIPTS / "train_loop.py", "--steps", "30", "--sleep", "0.05",
                             opts=("--no-stacks",), env=env)
    assert proc.returncode == 0, proc.stderr
    (dev,) = rep["evidence"]["nvml"]
    assert dev["name"] == "Fake H100" and dev["util_mean"] == pytest.approx(0.97)
    assert dev["throttle"]["hw-thermal"] == 1.0
    assert dev["proc_mem_peak"] == 3 << 30
    cats = {f["category"]: f for f in rep["findings"]}
    assert "throttled" in cats
    assert rep["primary"] == "compute-bound"  # GPU busy 97% per NVML, no input wait
    assert rep["source"]["collectors"]["nvml"]["ok"] is True
    drawn = gpubottle_here("report", str(replayed_run.run_dir), "--html", str(tmp_path / "r.html"))
    assert drawn.returncode == 0, drawn.stderr
    html = (tmp_path / "r.html").read_text()  # NVML's readings drawn over time
    assert "GPU (NVML)" in html and "GPU 0 busy" in html and "PCIe (NVML)" in html


def test_without_a_gpu_the_report_says_why(loop_run):
    proc, rep = loop_run.proc, loop_run.report
    status = rep["source"]["collectors"]["nvml"]
    assert status["ok"] is False and "no NVIDIA driver" in status["reason"]
    assert rep["evidence"]["nvml"] == [] and rep["evidence"]["cuda_memory"] is None
    assert "no GPU evidence" in proc.stderr


def test_cuda_oom_is_reported_as_oom_risk(run_profiled):
    proc, rep = run_profiled(SCRIPTS / "cuda_oom.py", opts=("--no-stacks",))
    assert proc.returncode == 1
    assert "OutOfMemoryError" in proc.stderr  # the script's own traceback, unchanged
    assert rep["primary"] == "oom-risk"
    f = rep["findings"][0]
    assert f["severity"] == "critical" and "died of CUDA out-of-memory" in f["summary"]
    assert "Tried to allocate 2.00 GiB" in f["evidence"][0]["text"]
    assert any(x["change"].get("batch_size") == [64, 32] for x in f["fixes"])


def test_profiler_window_runs_and_is_read_by_the_trace_reader(loop_run):
    proc, rep = loop_run.proc, loop_run.report
    assert proc.returncode == 0 and rep is not None, proc.stderr
    trace = loop_run.dir / "run" / "profiler-window.pt.trace.json"
    assert trace.exists()
    gpu = rep["evidence"]["gpu"]
    assert gpu["source"] == "profiler-window" and gpu["uses_gpu"] is False
    assert gpu["steps"] == 4
    assert sum(gpu["breakdown"].values()) == pytest.approx(1.0, abs=0.01)
    # The same file explains itself with `gpubottle report`.
    again = gpubottle_here("report", str(trace))
    assert again.returncode == 0 and "ProfilerStep# spans" in again.stdout


@pytest.mark.parametrize("their_start", [2, 8])  # before our window, and in the middle of it
def test_the_scripts_own_profiler_wins_and_its_trace_stays_whole(run_profiled, tmp_path: Path,
                                                                 their_start: int):
    theirs = tmp_path / "theirs.json"
    proc, rep = run_profiled(SCRIPTS / "own_profiler.py", str(their_start), str(theirs),
                             opts=("--profile-window", "on", "--window-start", "5", "--no-stacks"))
    assert proc.returncode == 0, proc.stderr
    with open(theirs) as fh:
        events = json.load(fh)["traceEvents"]
    steps = {e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")}
    assert len(steps) >= 4, steps  # their four active steps, all there
    assert "own torch.profiler" in rep["source"]["collectors"]["profiler-window"]["reason"]
    assert not (tmp_path / "run" / "profiler-window.pt.trace.json").exists() or their_start == 8


def test_loops_without_an_optimizer_get_the_step_probes_too(run_profiled, manual_loop_run,
                                                           tmp_path: Path):
    """Backward-only training and inference over a DataLoader: the profiler window (and CUDA memory,
    censuses) run at their step boundaries as they do at optimizer steps."""
    window = ("--profile-window", "on", "--window-start", "3", "--window-steps", "3", "--no-stacks")
    proc, rep = manual_loop_run.proc, manual_loop_run.report
    assert proc.returncode == 0 and rep is not None, proc.stderr
    assert rep["steps"]["source"] == "backward" and rep["evidence"]["gpu"]["steps"] == 3
    script = tmp_path / "infer.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "model = torch.nn.Linear(16, 4).eval()\n"
        "with torch.no_grad():\n"
        "    for (x,) in DataLoader(TensorDataset(torch.randn(640, 16)), batch_size=32):\n"
        "        model(x)\n")
    proc, rep = run_profiled(script, opts=window)
    assert proc.returncode == 0, proc.stderr
    assert rep["steps"]["source"] == "dataloader" and rep["evidence"]["gpu"]["steps"] == 3
