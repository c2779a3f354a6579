"""Traces as PyTorch 2.x writes them: recorded with torch 2.13 on the CPU (tests/traces/record.py),
and CUDA traces built here in the shape Kineto gives them (GPU copies of each ProfilerStep,
device-to-device copies)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TRACES

from gpubottle.rules import diagnose
from gpubottle.trace.load import trace_evidence


def _report(name: str):
    ev = trace_evidence(str(TRACES / f"{name}.pt.trace.json.gz"))
    return ev, diagnose(ev)


def test_a_single_process_loader_that_waits_is_data_starved():
    ev, rep = _report("starved_single")
    assert rep.primary == "data-starved"
    assert len(ev.steps.durations_s) == 5  # the profiler's 5 active steps, each once
    assert ev.gpu is not None and ev.gpu.breakdown["dataloader"] > 0.8  # user_annotation waits
    assert ev.loaders[0].num_workers == 0
    fix = next(x for x in rep.findings[0].fixes if "num_workers" in x.change)
    assert fix.change["num_workers"][0] == 0 and fix.change["num_workers"][1] >= 2


def test_a_worker_loader_that_waits_is_data_starved_without_claiming_num_workers_0():
    ev, rep = _report("starved_workers")
    assert rep.primary == "data-starved"
    assert ev.loaders[0].num_workers is None  # the trace shows workers, not how many
    assert "num_workers=0" not in rep.findings[0].summary
    assert rep.findings[0].open_question  # the CPU was not measured: preprocessing-bound stays open


def test_a_fed_cpu_loop_is_compute_bound_and_its_ranges_are_not_waits():
    ev, rep = _report("fed")
    assert rep.primary == "compute-bound"
    assert ev.gpu is not None and ev.gpu.breakdown["cpu_op"] > 0.6
    assert ev.gpu.breakdown["dataloader"] < 0.2
    assert len(ev.steps.durations_s) == 5


def test_a_profile_without_a_schedule_is_read_by_the_optimizers_steps():
    """No schedule, prof.step() never called: no ProfilerStep# in the trace. torch.optim annotates
    each step() (Optimizer.step#SGD.step): the steps end there, as `gpubottle run`'s own clock, and
    the starving loader is said (it read as one 0.5-s step, too few for a verdict)."""
    ev, rep = _report("unscheduled_starved")
    assert ev.steps.source == "trace-optimizer" and len(ev.steps.durations_s) == 8
    assert ev.steps.warmup == 1  # no schedule skipped it: the first step holds the profiler's start
    assert rep.primary == "data-starved"
    assert ev.gpu is not None and ev.gpu.breakdown["dataloader"] > 0.8


def _cuda_trace(path: Path, steps: int, device_copy: str | None, gpu_step_copies: bool) -> None:
    """Steps of 10 ms: 1 ms of host ops, a 6 ms kernel and a 2 ms copy launched from them."""
    events: list[dict[str, object]] = []
    for k in range(steps):
        t = 10_000.0 * k
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "ts": t,
                       "dur": 9_000.0, "pid": 1, "tid": 1})
        if gpu_step_copies:  # Kineto's copy of the step on the GPU timeline
            events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{k}",
                           "ts": t + 500, "dur": 9_000.0, "pid": 0, "tid": 7})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": t + 100, "dur": 900.0,
                       "pid": 1, "tid": 1})
        for j, (cat, name, start, dur) in enumerate([
            ("kernel", "nvjet_tst_128x128_64x4_1x2_h_bz_coopA", 1_000, 6_000),
            ("gpu_memcpy", device_copy or "Memcpy HtoD (Pageable -> Device)", 7_000, 2_000),
        ]):
            corr = 10 * k + j
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 200 + j,
                           "dur": 5.0, "pid": 1, "tid": 1, "args": {"correlation": corr}})
            events.append({"ph": "X", "cat": cat, "name": name, "ts": t + start, "dur": float(dur),
                           "pid": 0, "tid": 7, "args": {"correlation": corr, "bytes": 1 << 20}})
    path.write_text(json.dumps({"traceEvents": events}))


def test_gpu_copies_of_each_step_are_not_steps(tmp_path: Path):
    path = tmp_path / "t.json"
    _cuda_trace(path, 8, None, gpu_step_copies=True)
    ev = trace_evidence(str(path))
    assert len(ev.steps.durations_s) == 8
    assert ev.run.trace is not None and not any("left out" in n for n in ev.run.trace.notes)
    assert abs(sum(ev.steps.durations_s) / 8 - 0.010) < 0.0015


def test_device_to_device_copies_are_not_host_transfers(tmp_path: Path):
    host, device = tmp_path / "h.json", tmp_path / "d.json"
    _cuda_trace(host, 8, None, gpu_step_copies=False)
    _cuda_trace(device, 8, "Memcpy DtoD (Device -> Device)", gpu_step_copies=False)
    h, d = trace_evidence(str(host)), trace_evidence(str(device))
    assert h.gpu is not None and d.gpu is not None
    assert (h.gpu.copy_share or 0) > 0.15 and not d.gpu.copies and (d.gpu.copy_share or 0) == 0
    assert (d.gpu.device_copy_share or 0) > 0.15
    assert not any(f.category == "transfer-bound" for f in diagnose(d).findings)
    assert d.gpu.idle_share is not None and d.gpu.idle_share < h.gpu.idle_share + 0.01  # busy GPU time
    # Hopper's cuBLAS GEMM is a matmul: the precision split has something to say.
    assert d.gpu.matmul_share == 1.0 and d.gpu.unclassified_kernel_share == 0.0
