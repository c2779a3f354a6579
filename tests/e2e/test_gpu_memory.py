"""What fills GPU memory, through `gpubottle run` with tests/support/fake_cuda.py standing in for torch.cuda
(the census and the rule's computed fixes in-process: tests/unit/rules/gpu/test_gpu_memory_decide.py)."""

from __future__ import annotations

import json

import pytest

GIB = 1 << 30
SCRIPTS = __import__("conftest").SCRIPTS


def test_run_on_a_fake_gpu_oom_census_sync_sites_and_probed_steps_left_out(run_profiled, tmp_path):
    fake = {"total": 80 * GIB, "allocated": 70 * GIB, "reserved": 74 * GIB, "free": int(1.2 * GIB)}
    proc, rep = run_profiled(SCRIPTS / "fake_gpu_train.py", "--oom", "30", "--sync",
                             opts=("--no-stacks",), env={"FAKE_CUDA": json.dumps(fake)})
    assert proc.returncode == 1 and "OutOfMemoryError" in proc.stderr
    assert rep["primary"] == "oom-risk"
    mem = rep["evidence"]["cuda_memory"]
    assert mem["peak_allocated_bytes"] == 70 * GIB and mem["total_bytes"] == 80 * GIB
    c = mem["contents"]
    params = (32 * 64 + 64 + 64 * 2 + 2) * 4
    assert c["moment"] == "oom" and c["weights_bytes"] == params
    assert c["gradients_bytes"] == params and c["optimizer_state_bytes"] == params  # momentum
    assert c["top_tensors"][0][0] == "(512, 1024) float32"
    f = rep["findings"][0]
    # 78 GiB needed at batch 64, 0.9 * 75.2 GiB available -> 64 * 0.87 -> 32.
    assert f["fixes"][0]["change"] == {"batch_size": [64, 32]}
    # The script's .item() line, found through torch's sync debug warnings (every other step), and
    # its torch.cuda.synchronize() line (every step), which never warns: found by the wrapper.
    sites = {s["location"].split(":")[-1]: s["per_step"] for s in rep["evidence"]["sync_sites"]}
    assert sites[_line("loss.item()")] == pytest.approx(0.5, abs=0.34)
    assert sites[_line("marker: synchronize")] == 1.0
    # The profiler window ran (CPU activity only on this torch) and its steps, like the sync-debug
    # ones, are left out of the step statistics.
    assert (tmp_path / "run" / "profiler-window.pt.trace.json").exists()
    assert rep["steps"]["instrumented"] >= 5
    s = rep["steps"]
    assert s["measured"] == s["count"] - s["warmup"] - s["instrumented"] - s["pauses"]
    assert "under heavier probes left out" in proc.stderr


def _line(marker: str) -> str:
    text = (SCRIPTS / "fake_gpu_train.py").read_text().splitlines()
    return str(next(i for i, line in enumerate(text, 1) if marker in line))


def test_the_scripts_own_sync_debug_mode_and_peak_resets(run_profiled):
    # The allocator peaked at 50 GiB before the loop; the script resets the peak every step.
    fake = {"sync_mode": "error", "peak": 50 * GIB}
    proc, rep = run_profiled(SCRIPTS / "fake_gpu_train.py", "--steps", "20", "--reset-peak",
                             opts=("--no-stacks",), env={"FAKE_CUDA": json.dumps(fake)})
    assert proc.returncode == 0, proc.stderr
    assert rep["evidence"]["sync_sites"] == []
    assert "own sync debug mode" in rep["source"]["collectors"]["sync-sites"]["reason"]
    # Read before the first reset: the end's counters (10 GiB) alone would hide it.
    assert rep["evidence"]["cuda_memory"]["peak_allocated_bytes"] == 50 * GIB
    assert rep["primary"] != "oom-risk"  # 50 of 80 GiB: no memory finding


