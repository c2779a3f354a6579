"""Defects of the GPU paths found by reading NVML's and torch's sources, each against fakes that
behave like the real APIs (issue: GPU readiness)."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fake_pynvml  # noqa: E402
import pytest
from factories import evidence

from gpubottle.analysis.nvml import nvml_evidence
from gpubottle.collect.nvml import NvmlSampler, _newest
from gpubottle.evidence import NvmlDevice
from gpubottle.probes.syncs import SyncSites
from gpubottle.rules import diagnose
from gpubottle.wire import GpuDevices, GpuSample, encode


def _gpu_file(tmp: Path, devices: list[dict[str, Any]], samples: list[list[Any]]) -> str:
    path = tmp / "gpu.jsonl"
    lines = [encode(GpuDevices(devices))] + [encode(GpuSample(float(i), s)) for i, s in enumerate(samples)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_gpu_split_into_mig_instances_is_never_the_runs_by_pid(tmp_path: Path):
    """As root, the parent's process list is every instance's: the run's PID matches there, and the
    other tenants' 50 GiB would be counted as the run's."""
    path = _gpu_file(tmp_path, [
        {"key": 0, "index": 0, "uuid": "GPU-p", "metrics": ["mem_used"]},
        {"key": 1, "index": 0, "mig": 0, "uuid": "MIG-a", "metrics": ["mem_used"]},
    ], [[[0, {"mem_used": 60 << 30, "pid_match": 1, "proc_mem": 50 << 30, "nprocs": 5}],
         [1, {"mem_used": 9 << 30}]]] * 3)
    got = {(d.index, d.mig): d for d in nvml_evidence(path, (None, None), ["MIG-a"], True).devices}
    parent, child = got[(0, None)], got[(0, 0)]
    assert child.role == "run" and parent.role == "parent"
    assert parent.proc_mem_peak is None  # the others' memory is not the run's


def test_the_software_power_cap_is_the_normal_state_at_full_load():
    e = evidence(step_s=0.05)
    e.nvml = [NvmlDevice(index=0, role="run", samples=20, throttle={"sw-power-cap": 0.9},
                         power_mean_w=699, power_limit_w=700)]
    f = next(x for x in diagnose(e).findings if x.category == "throttled")
    assert f.severity == "info" and "normal" in f.summary
    e.nvml[0].throttle = {"hw-slowdown": 0.5, "sw-power-cap": 0.9}
    f = next(x for x in diagnose(e).findings if x.category == "throttled")
    assert f.severity == "warning" and "hw-slowdown" in f.summary and "sw-power-cap" not in f.summary


def test_host_to_gpu_traffic_is_pcie_rx(tmp_path: Path):
    path = _gpu_file(tmp_path, [{"key": 0, "index": 0, "uuid": "GPU-x", "metrics": ["pcie_tx"]}],
                     [[[0, {"pcie_rx": 100, "pcie_tx": 5}]]])
    (d,) = nvml_evidence(path, (None, None), ["GPU-x"], True).devices
    assert "pcie_rx" in d.missing  # what answered is said by direction
    assert d.pcie_rx_mean == 100 * 1024 and d.pcie_tx_mean == 5 * 1024


def test_a_broken_count_never_surfaces_in_the_scripts_warning():
    syncs = SyncSites()
    syncs._site = lambda *a: 1 / 0  # type: ignore[method-assign]
    syncs.start()
    try:
        with warnings.catch_warnings():
            warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)
    finally:
        syncs.stop()


def test_the_generic_accelerator_reset_folds_the_peak_first():
    from gpubottle.probes.cuda import CudaProbe
    from gpubottle.probes.hooks import StepHooks

    state = {"peak": 50}
    cuda = SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                           current_device=lambda: 0,
                           memory_stats=lambda i: {"allocated_bytes.all.peak": state["peak"],
                                                   "reserved_bytes.all.peak": state["peak"]},
                           memory=SimpleNamespace(reset_peak_memory_stats=lambda d=None: None))
    acc = SimpleNamespace(reset_peak_memory_stats=lambda d=None: state.update(peak=1))
    torch = SimpleNamespace(cuda=cuda, accelerator=acc, device=lambda d: SimpleNamespace(index=0))
    probe = CudaProbe(SimpleNamespace(emit=lambda r: None), StepHooks(), None)  # type: ignore[arg-type]
    probe.watch_peak_resets(torch)
    torch.accelerator.reset_peak_memory_stats(0)
    assert state["peak"] == 1 and probe._folded[0][0] == 50


def test_temperature_falls_back_when_the_newer_call_is_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_NVML", json.dumps({"mode": "ok", "temp_v": "unsupported",
                                                "devices": [{"temp": 81}]}))
    got = _newest(fake_pynvml, ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"), 0,
                  fake_pynvml.NVML_TEMPERATURE_GPU)
    assert got == 81


class FakeClock:
    """The sampler's clock and its sleep: a blocking NVML call advances it by its latency."""

    def __init__(self) -> None:
        self.t = 500.0
        self.waits = 0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def test_slow_pcie_reads_keep_the_period_and_timestamps_honest(monkeypatch: pytest.MonkeyPatch):
    """nvmlDeviceGetPcieThroughput blocks ~20 ms a call: with 8 GPUs a sample's reads take 0.32 s,
    more than the 0.25 s period. Samples stay on the period's grid, stamped inside their reads, and
    the PCIe reads come less often until a sample fits in half the period. On a fake clock: the
    schedule itself, with no real waiting."""
    monkeypatch.setenv("FAKE_NVML", json.dumps({"mode": "ok", "devices": [{} for _ in range(8)],
                                                "latency": {"pcie_tx": 0.02, "pcie_rx": 0.02}}))
    clock = FakeClock()
    monkeypatch.setattr(fake_pynvml, "sleep", clock.advance)

    def wait(seconds: float) -> bool:  # the loop's sleep: True (stop) after 40 samples
        assert seconds >= 0
        clock.advance(seconds)
        clock.waits += 1
        return clock.waits > 40

    out = io.StringIO()
    sampler = NvmlSampler(out, interval=0.25, backend=fake_pynvml, env={}, now=clock, wait=wait)
    assert sampler.probe()
    start = clock.t
    sampler._loop()
    rows = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    ts = [r[1] for r in rows]
    slow = [r for r in rows if "pcie_tx" in r[2][0][1]]
    assert len(rows) == 40 and sampler.slow_every == 16  # doubled while a sample took > 0.125 s
    assert ts[0] == pytest.approx(start + 0.25 + 0.16)  # the middle of its 0.32 s of reads
    assert len(slow) < 10 and rows[-1][1] - rows[0][1] < 40 * 0.25 + 3 * 0.32
    # Samples after a slow one are not read back to back: the next one waits for the grid.
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert min(gaps) > 0.1 and sorted(gaps)[len(gaps) // 2] == pytest.approx(0.25)


def test_measured_steps_shorter_than_nvmls_interval_take_the_samples_beside_them(tmp_path: Path):
    """Not the whole run's samples, idle start-up included (issue 34.9)."""
    from gpubottle.wire import GpuDevices, GpuSample, encode

    path = tmp_path / "gpu.jsonl"
    lines = [encode(GpuDevices([{"key": 0, "index": 0, "uuid": "GPU-x", "metrics": ["util"]}]))]
    lines += [encode(GpuSample(t, [[0, {"util": u}]])) for t, u in ((1.0, 0), (2.0, 0), (3.0, 0),
                                                                    (4.0, 90), (5.0, 94), (6.0, 0))]
    path.write_text("\n".join(lines) + "\n")
    reading = nvml_evidence(str(path), (4.2, 4.6), ["GPU-x"], True)
    (d,) = reading.devices
    assert d.samples == 2 and d.util_mean == pytest.approx(0.92)
    assert any("shorter than the sampling interval" in p for p in reading.problems)


def test_nvml_utilization_alone_yields_to_the_devices_clock():
    """A loop of tiny kernels keeps NVML's utilization high: where the device's clock saw the steps
    and the host was not ahead of the GPU, NVML alone does not call the run compute-bound."""
    ev = evidence(steps=40, step_s=0.01)
    ev.nvml = [NvmlDevice(index=0, role="run", util_mean=0.95, util_p10=0.9, samples=20)]
    cb = [f for f in diagnose(ev).findings if f.category == "compute-bound"]
    assert cb and "tells them apart" in (cb[0].open_question or "")
    st = ev.steps
    st.device_s, st.device_lag_s = [0.01] * 40, [0.0005] * 40  # the GPU catches up every step
    assert not any(f.category == "compute-bound" and "NVML" in " ".join(x.text for x in f.evidence)
                   for f in diagnose(ev).findings)
