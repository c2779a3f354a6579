"""NVML against the real API's semantics through tests/support/fake_pynvml.py, in a real run (recorded
in tests/runs/): only the run's own GPUs decide a verdict (device discovery in-process:
tests/unit/collect/test_nvml_devices_fake.py)."""

from __future__ import annotations

import json
import os

from conftest import SCRIPTS, SUPPORT

GIB = 1 << 30
A, B = "GPU-aaaaaaaa-1111-2222-3333-444444444444", "GPU-bbbbbbbb-1111-2222-3333-444444444444"


def test_another_tenants_full_gpu_does_not_decide_the_verdict(replayed_run):
    """A compute-bound run on GPU 0 (its UUID from the script's torch, a container's PIDs) beside
    someone else's full, throttled GPU 1: no oom-risk, no throttling, compute-bound from GPU 0."""
    spec = {"mode": "ok", "devices": [
        {"name": "Fake H100", "uuid": A, "util": 97, "proc_mem": 3 * GIB, "procs": "host",
         "mem_used": 4 * GIB, "mem_total": 80 * GIB},
        {"name": "Fake H100", "uuid": B, "util": 100, "mem_used": 79 * GIB, "mem_total": 80 * GIB,
         "throttle": 0x40, "others": [79 * GIB]}]}
    env = {"GPUBOTTLE_NVML_BACKEND": "fake_pynvml", "FAKE_NVML": json.dumps(spec),
           "FAKE_CUDA": json.dumps({"uuid": A[4:], "allocated": 2 * GIB, "reserved": 3 * GIB}),
           "PYTHONPATH": str(SUPPORT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc, rep = replayed_run(SCRIPTS / "fake_gpu_train.py", "--steps", "40", opts=("--no-stacks",), env=env)
    assert proc.returncode == 0 and rep is not None, proc.stderr
    roles = [(d["uuid"], d["role"]) for d in rep["evidence"]["nvml"]]
    assert roles == [(A, "run"), (B, "other")]
    assert rep["evidence"]["nvml"][0]["proc_mem_source"] == "only-process"
    cats = {f["category"] for f in rep["findings"]}
    assert "oom-risk" not in cats and "throttled" not in cats
    assert rep["primary"] != "oom-risk"
