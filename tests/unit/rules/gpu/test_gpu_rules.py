"""GPU rules as pure functions, on evidence as a trace (or run's profiler window) would give it."""

from __future__ import annotations

from gpubottle.evidence import (
    CopyEvidence,
    Evidence,
    GpuEvidence,
    RankEvidence,
    RunInfo,
    StepEvidence,
    SyncEvidence,
    TraceReadInfo,
)
from gpubottle.rules import diagnose
from gpubottle.rules.gpu import decide as gd


def _ev(steps: int = 6, step_s: float = 0.1, wait_share: float = 0.0, **gpu: object) -> Evidence:
    base: dict[str, object] = dict(
        source="trace", steps=steps, step_s=step_s, kernel_share=0.3, idle_share=0.7,
        idle_host_share=0.05, idle_between_share=0.05, copy_share=0.0, sync_share=0.0,
        breakdown={"kernel": 0.3, "memcpy": 0.0, "memset": 0.0, "communication": 0.0, "runtime": 0.05,
                   "dataloader": wait_share, "cpu_op": 0.6 - wait_share, "other": 0.05},
    )
    base.update(gpu)
    st = StepEvidence(source="profiler", durations_s=[step_s] * steps,
                      input_wait_s=[step_s * wait_share] * steps)
    return Evidence(run=RunInfo(kind="trace", trace=TraceReadInfo()), steps=st,
                    gpu=GpuEvidence(**base))  # type: ignore[arg-type]


def _cats(ev: Evidence) -> dict:
    return {f.category: f for f in diagnose(ev).findings}


def test_busy_kernels_are_compute_bound_on_gpu():
    assert diagnose(_ev(kernel_share=0.8, idle_host_share=0.02)).primary == "compute-bound"
    assert "compute-bound" not in _cats(_ev(kernel_share=0.3))


def test_a_float64_model_on_the_gpu_is_offered_float32_first():
    ev = _ev(kernel_share=0.8, idle_host_share=0.02)
    ev.params_dtype = "float64"
    fixes = _cats(ev)["compute-bound"].fixes
    assert fixes[0].text.startswith("the model trains in float64 (double): GPUs run it at a fraction")
    assert "try it" in fixes[0].text and len(fixes) > 1


def test_pageable_copies_are_transfer_bound_with_pinning_fix():
    ev = _ev(copy_share=0.3, copies=[CopyEvidence("HtoD", "pageable", 60, 1.8, 3 << 30)])
    report = diagnose(ev)
    assert report.primary == "transfer-bound"
    d = gd.decide_transfer(ev)
    assert d is not None and d.pin and d.pageable == 1.0 and not d.dtoh_every_step
    assert report.findings[0].fixes[0].change == {}  # no loader: nothing to set, only the words
    # A 0.3 ms copy in a 2 ms step is above the share but under the absolute floor.
    tiny = _ev(step_s=0.002, copy_share=0.15, copies=[CopyEvidence("HtoD", "pageable", 6, 0.0018)])
    assert "transfer-bound" not in _cats(tiny)


def test_a_dataset_that_fits_in_free_gpu_memory_is_moved_once():
    from gpubottle.evidence import LoaderInfo

    # 6 steps copied 3 GiB: 512 MiB a step, batch 128 -> 4 MiB a sample; 2000 samples = 7.8 GiB.
    ev = _ev(copy_share=0.3, copies=[CopyEvidence("HtoD", "pageable", 60, 1.8, 3 << 30)],
             total_memory_bytes=80 << 30, peak_reserved_bytes=20 << 30)
    ev.loaders = [LoaderInfo(id=1, site="train.py:9", batch_size=128, dataset_len=2000, batches=6)]
    d = gd.decide_transfer(ev)
    assert d is not None and d.resident is not None and d.pin_change
    r = d.resident
    assert (r.samples, r.per_sample_bytes, r.free_bytes, r.site) == (2000, 4 << 20, 60 << 30, "train.py:9")
    f = _cats(ev)["transfer-bound"]
    assert f.fixes[0].change == {"pin_memory": [False, True]} and f.fixes[0].where == "train.py:9"
    ev.loaders[0].dataset_len = 200_000  # 781 GiB: no such advice
    d = gd.decide_transfer(ev)
    assert d is not None and d.resident is None


def test_synchronising_calls_are_sync_bound():
    ev = _ev(sync_share=0.25, syncs=[SyncEvidence("cudaStreamSynchronize", 600, 0.15)])
    assert "sync-bound" in _cats(ev)
    assert "sync-bound" not in _cats(_ev(sync_share=0.02))


def test_gpu_memory_near_capacity_is_oom_risk():
    full = _ev(total_memory_bytes=40 << 30, peak_reserved_bytes=39 << 30, peak_allocated_bytes=20 << 30)
    f = _cats(full)["oom-risk"]
    assert f.severity == "critical"
    assert ("fragmentation_bytes", 19 << 30) in [(e.name, e.value) for e in f.evidence]
    roomy = _ev(total_memory_bytes=40 << 30, peak_reserved_bytes=10 << 30)
    assert "oom-risk" not in _cats(roomy)


def test_idle_gpu_with_nothing_submitted_is_launch_bound_but_not_when_waiting_for_data():
    assert "launch-bound" in _cats(_ev(idle_host_share=0.4))
    # The same idle time spent in the DataLoader is the input rules' business.
    assert "launch-bound" not in _cats(_ev(idle_host_share=0.4, wait_share=0.35))


def test_exposed_communication():
    ev = _ev(communication_share=0.4, communication_overlap=0.1)
    assert "communication-bound" in _cats(ev)
    hidden = _ev(communication_share=0.4, communication_overlap=0.9)
    assert "communication-bound" not in _cats(hidden)


def test_straggler_rank():
    ev = _ev()
    ev.ranks = [RankEvidence(0, "a", 6, 0.10), RankEvidence(1, "b", 6, 0.101),
                RankEvidence(2, "c", 6, 0.14)]
    ev.shown_rank = 2
    f = _cats(ev)["straggler"]
    assert f.summary.startswith("rank 2 sets the pace of the 3 ranks")
    ev.ranks[2].mean_step_s = 0.105
    assert "straggler" not in _cats(ev)


def test_single_trace_step_is_enough_for_a_verdict():
    assert diagnose(_ev(steps=1, kernel_share=0.9, idle_host_share=0.0)).primary == "compute-bound"


def test_the_models_own_python_loops_lead_launch_bound_and_gpu_compute_bound():
    """On a GPU a submodule called once per sample, or an RNN cell stepped over a sequence, is many
    small kernels and launches: one call on the whole batch (nn.LSTM over the sequence) leads before
    CUDA graphs or faster math, from the counted step's records (device-agnostic probes)."""
    from gpubottle.evidence import CellLoop, InnerPerSample, ModelCallCount

    launch = _ev(idle_host_share=0.4)
    launch.model_calls = ModelCallCount("CharRNN", "rnn.py:40", 1, 32, ["model"], cells=[
        CellLoop("LSTMCell", "self.cell", "rnn.py:22", 64, 128, 128, 0.6, "e", 1)])
    fixes = _cats(launch)["launch-bound"].fixes
    assert "nn.LSTM(128, 128, batch_first=True)" in fixes[0].text and "CUDA graphs" in fixes[1].text
    busy = _ev(kernel_share=0.8, idle_host_share=0.02)
    busy.model_calls = ModelCallCount("SetEncoder", "sets.py:24", 1, 64, ["model"], per_sample_inner=[
        InnerPerSample("Sequential", "self.enc", "sets.py:16", 64, [16, 64], [64, 16, 64])])
    fixes = _cats(busy)["compute-bound"].fixes
    assert fixes[0].text.startswith("the model's forward calls self.enc (Sequential) 64 times"), fixes[0]
    assert len(fixes) > 1  # faster math follows
    assert "nn.LSTM" not in _cats(_ev(idle_host_share=0.4))["launch-bound"].fixes[0].text


def test_work_the_step_does_for_nothing_is_said_before_faster_math_on_a_gpu():
    """A teacher's forward recorded by autograd (its gradients computed, no optimizer holding them)
    on a GPU-bound run: the fix that removes that work comes before faster math, as on a CPU."""
    from gpubottle.evidence import ModelCallCount, UntrainedGrads

    busy = _ev(kernel_share=0.8, idle_host_share=0.02)
    busy.model_calls = ModelCallCount("Student", "kd.py:30", 1, 64, ["student", "teacher"], untrained=[
        UntrainedGrads("teacher", "kd.py:31", 11_000_000, 1_000_000, True)])
    fixes = _cats(busy)["compute-bound"].fixes
    assert "teacher" in fixes[0].text and "no_grad" in fixes[0].text, fixes[0].text
    assert len(fixes) > 1


def test_checkpointing_on_a_gpu_is_a_try_without_a_number():
    """The checkpointed forwards timed on the host are the GPU's launches, not its work: turning
    checkpointing off comes before faster math, as a try with the GPU's peak memory beside it."""
    from gpubottle.evidence import CheckpointRecompute, CudaMemoryEvidence

    busy = _ev(kernel_share=0.8, idle_host_share=0.02)
    busy.recompute = CheckpointRecompute(0.3, 0.004, 24, 20, "train.py:50", None, ["Block"])
    busy.cuda_memory = CudaMemoryEvidence(device=0, peak_reserved_bytes=20 << 30, total_bytes=80 << 30)
    fixes = _cats(busy)["compute-bound"].fixes
    assert fixes[0].text.startswith("activation checkpointing is on"), fixes[0].text
    assert "try it and time it" in fixes[0].text and "20.00 GiB of 80.00 GiB" in fixes[0].text
    assert fixes[0].expected_step_s is None and len(fixes) > 1


def test_a_penalty_over_the_parameters_is_said_before_faster_math_on_a_gpu():
    """Its ops are small kernels, one launch each, per tensor, forward and backward."""
    from gpubottle.evidence import ModelCallCount, ParamPenalty

    busy = _ev(kernel_share=0.8, idle_host_share=0.02)
    busy.model_calls = ModelCallCount("Net", "train.py:40", 1, 256, ["model"], penalty=ParamPenalty(
        "train.py:44", 161, 483, 0.01, ["pow"], True))
    fixes = _cats(busy)["compute-bound"].fixes
    assert fixes[0].text.startswith("each step computes a penalty over the model's parameters"), fixes[0]
    assert "weight_decay=2 * lam" in fixes[0].text and len(fixes) > 1
