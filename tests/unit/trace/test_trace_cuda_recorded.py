"""CUDA traces recorded on an NVIDIA H100 and an H200 (torch 2.11.0+cu130, `make gpu-check`'s
profiler windows of examples/gpu/*.py, 2026-11-26), and hand-built ones for the device's own timing
of syncs.

On a real device the host runs ahead of the GPU: the compute-bound example's five host steps took
6-7 ms each while each step's kernels took 35 ms, and the window closed with the profiler's own
cudaDeviceSynchronize (148 ms, after the last step) that absorbed the backlog."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TRACES

from gpubottle.rules import diagnose
from gpubottle.trace.load import trace_evidence


def _report(name: str):
    ev = trace_evidence(str(TRACES / f"h100_{name}.pt.trace.json.gz"))
    return ev, diagnose(ev)


def test_h100_traces_give_the_examples_verdicts():
    for name, want in (("compute_bound", "compute-bound"), ("transfer_bound", "transfer-bound"),
                       ("data_starved", "data-starved")):
        _ev, rep = _report(name)
        assert rep.primary == want, (name, [(f.category, f.summary) for f in rep.findings])


def test_a_host_ahead_of_the_gpu_is_timed_by_the_device():
    ev, rep = _report("compute_bound")
    g = ev.gpu
    assert g is not None and g.step_s is not None
    # The plain script measured 28.3 steps/s (35.3 ms a step) on the same machine.
    assert abs(g.step_s - 0.0353) / 0.0353 < 0.05
    assert (g.kernel_share or 0) > 0.95
    # The profiler's flush after the last step is not the loop's synchronisation.
    assert {s.call for s in g.syncs} == {"cudaDeviceSynchronize"}
    assert (g.sync_share or 0) < 0.01
    assert not any(f.category == "sync-bound" for f in rep.findings)


def test_pageable_copies_on_the_h100_are_transfer_bound():
    ev, rep = _report("transfer_bound")
    assert ev.gpu is not None
    top = ev.gpu.copies[0]
    # Five steps of a 64 MiB batch and its 2 KiB of labels.
    assert (top.direction, top.memory) == ("HtoD", "pageable") and top.bytes == 5 * ((64 << 20) + 2048)
    assert rep.findings[0].category == "transfer-bound" and rep.findings[0].severity == "critical"


def _step(events: list[dict[str, object]], t: float, k: int, kernel_ms: float, host_ms: float,
          sync: bool) -> float:
    """One step: a launch at t, the kernel running kernel_ms from t+0.05 ms, then (with `sync`) a
    cudaStreamSynchronize until the kernel ends, then host_ms of host work. Returns the step's end."""
    us = 1000.0
    k_start = t + 50.0
    k_end = k_start + kernel_ms * us
    end = (k_end if sync else t + 100.0) + host_ms * us
    events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "ts": t,
                   "dur": end - t, "pid": 1, "tid": 1})
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 10, "dur": 20.0,
                   "pid": 1, "tid": 1, "args": {"correlation": k}})
    events.append({"ph": "X", "cat": "kernel", "name": "nvjet_tst_128x128", "ts": k_start,
                   "dur": kernel_ms * us, "pid": 0, "tid": 7, "args": {"correlation": k}})
    if sync:
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": t + 40,
                       "dur": k_end - t - 40 + 5, "pid": 1, "tid": 1})
    return end


def _trace(path: Path, kernel_ms: float, host_ms: float, sync: bool, flush: bool = False) -> None:
    events: list[dict[str, object]] = []
    t = 0.0
    for k in range(6):
        t = _step(events, t, k, kernel_ms, host_ms, sync)
    if flush:  # the profiler's own synchronise after the last step
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": t + 10,
                       "dur": 30_000.0, "pid": 1, "tid": 1})
    path.write_text(json.dumps({"traceEvents": events}))


def test_a_sync_that_leaves_the_gpu_idle_is_sync_bound(tmp_path: Path):
    # Each step: 5 ms of kernels, a sync, then 5 ms of host work the GPU waits through.
    _trace(tmp_path / "t.json", kernel_ms=5, host_ms=5, sync=True)
    ev = trace_evidence(str(tmp_path / "t.json"))
    assert ev.gpu is not None and 0.4 < (ev.gpu.sync_share or 0) < 0.55
    assert any(f.category == "sync-bound" and f.severity == "warning" for f in diagnose(ev).findings)


def test_a_sync_while_the_gpu_stays_busy_costs_nothing(tmp_path: Path):
    # A GPU-bound loop that synchronises every step: the next launch follows the sync at once.
    _trace(tmp_path / "t.json", kernel_ms=30, host_ms=0.02, sync=True, flush=True)
    ev = trace_evidence(str(tmp_path / "t.json"))
    assert ev.gpu is not None and (ev.gpu.sync_share or 0) < 0.01
    assert not any(f.category == "sync-bound" for f in diagnose(ev).findings)


# H200 windows (make gpu-check's examples/gpu/shapes.py, torch 2.11.0+cu130, 2026-11-26).

def _h200(name: str):
    ev = trace_evidence(str(TRACES / f"h200_{name}.pt.trace.json.gz"))
    return ev, diagnose(ev)


def test_an_item_every_step_on_a_busy_gpu_is_not_sync_bound():
    # The host waits in .item() each step, but the GPU relaunches at once: its bubbles are tiny.
    ev, rep = _h200("host_ahead_1")
    assert ev.gpu is not None and (ev.gpu.sync_share or 0) < 0.05
    # Five .item() waits of ~10.5 ms in 15.6 ms steps: the host blocked two thirds of the window.
    sync = next(s for s in ev.gpu.syncs if s.call == "cudaStreamSynchronize")
    assert sync.count == 5 and sync.seconds > 0.04
    assert rep.primary == "compute-bound"
    assert not any(f.category == "sync-bound" for f in rep.findings)


def test_the_wait_for_data_after_a_sync_is_the_inputs_cost_not_the_syncs():
    ev, rep = _h200("data_1_2")
    assert ev.gpu is not None and ev.gpu.breakdown["dataloader"] > 0.8
    assert (ev.gpu.sync_share or 0) < 0.05
    assert rep.primary == "data-starved"
    assert not any(f.category == "sync-bound" for f in rep.findings)


def test_pageable_pinned_and_item_copies_are_told_apart():
    ev, rep = _h200("copies")
    assert ev.gpu is not None
    kinds = {(c.direction, c.memory): c for c in ev.gpu.copies}
    assert kinds[("HtoD", "pageable")].bytes == 5 * (32 << 20)  # 4096 x 2048 float32, 5 steps
    assert kinds[("HtoD", "pinned")].bytes == 5 * (32 << 20)
    assert ("DtoH", "pinned") in kinds  # .item(): 4 bytes a step
    assert kinds[("HtoD", "pageable")].seconds > 3 * kinds[("HtoD", "pinned")].seconds
    assert {"cudaStreamSynchronize", "cudaDeviceSynchronize"} <= {s.call for s in ev.gpu.syncs}
    assert rep.primary == "transfer-bound"
