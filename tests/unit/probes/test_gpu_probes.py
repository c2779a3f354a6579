"""The GPU probes in-process: NVML readings that fail per metric or for good (fake pynvml), and
the sync sites found through torch's sync debug warnings."""

from __future__ import annotations

import io
import json

import fake_pynvml
import pytest

from gpubottle.collect.nvml import NvmlSampler


def _fake(monkeypatch: pytest.MonkeyPatch, spec: dict) -> None:
    monkeypatch.setenv("FAKE_NVML", json.dumps(spec))


def test_no_driver_is_missing_evidence_with_the_reason(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "nodriver"})
    s = NvmlSampler(io.StringIO(), backend=fake_pynvml)
    assert s.probe() is False
    assert "no NVIDIA driver" in (s.reason or "")


def test_no_permission(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "nopermission"})
    s = NvmlSampler(io.StringIO(), backend=fake_pynvml)
    assert s.probe() is False and "refused" in (s.reason or "")


def test_partial_support_and_none_values_degrade_per_metric(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "ok", "devices": [
        {"name": "Old GPU", "unsupported": ["pcie_tx", "pcie_rx", "throttle"], "none": ["power"],
         "util": 42}]})
    out = io.StringIO()
    s = NvmlSampler(out, backend=fake_pynvml)
    assert s.probe() is True
    metrics = s.devices[0].metrics
    assert "util" in metrics and "pcie_tx" not in metrics and "throttle" not in metrics
    assert "power" not in metrics  # None at probe time: not offered
    rec = s.sample()
    values = rec.devices[0][1]
    assert values["util"] == 42 and "pcie_tx" not in values


def test_metric_that_starts_failing_is_dropped_not_fatal(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "ok", "devices": [{"util": 90}]})
    s = NvmlSampler(io.StringIO(), backend=fake_pynvml)
    assert s.probe()
    _fake(monkeypatch, {"mode": "ok", "devices": [{"util": 90, "unsupported": ["temp"]}]})
    values = s.sample().devices[0][1]
    assert "temp" not in values and values["util"] == 90
    assert "temp" not in s.devices[0].metrics


def test_sync_sites_are_attributed_to_user_code_and_filters_restored():
    import warnings

    from gpubottle.probes.syncs import SyncSites

    shown = []
    warnings.simplefilter("default")
    saved_filters = list(warnings.filters)
    original = warnings.showwarning
    warnings.showwarning = lambda *a, **k: shown.append(str(a[0]))
    try:
        s = SyncSites()
        s.start()
        for _ in range(3):  # the warning torch's sync debug mode issues, from this (user) file
            warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)
        warnings.warn("an unrelated warning", UserWarning, stacklevel=1)
        s.stop()
        assert warnings.filters == saved_filters
        assert shown == ["an unrelated warning"]  # others still reach the user
        ((site, count),) = s.sites.items()
        assert site.startswith("tests/unit/probes/test_gpu_probes.py:") and count == 3
    finally:
        warnings.showwarning = original


def test_sync_sites_make_a_sync_finding_that_points_at_the_line():
    from factories import evidence

    from gpubottle.evidence import SyncSite
    from gpubottle.rules import diagnose

    ev = evidence(step_s=0.1, main=0.9, tree=0.9)
    ev.sync_sites = [SyncSite("train.py:88", 2.0)]
    f = next(x for x in diagnose(ev).findings if x.category == "sync-bound")
    assert f.fixes[0].where == "train.py:88" and "2.0x per step" in f.evidence[0].text



def test_sync_sites_keep_the_library_call_and_skip_gpubottles_own_work():
    import warnings

    from gpubottle.probes.syncs import SyncSites

    busy = [False]
    original = warnings.showwarning
    try:
        s = SyncSites(quiet=lambda: busy[0])
        s.start()
        lib = "/usr/lib/python3/dist-packages/torch/optim/adam.py"  # an installed library's frame
        warnings.warn_explicit("called a synchronizing CUDA operation", UserWarning, lib, 520)
        busy[0] = True  # gpubottle's step-boundary probes running: their syncs are not the script's
        warnings.warn_explicit("called a synchronizing CUDA operation", UserWarning, lib, 520)
        busy[0] = False
        s.stop()
        ((site, count),) = s.sites.items()
        assert site.startswith("tests/unit/probes/test_gpu_probes.py:") and count == 1
        assert s.calls[site] == lib + ":520"  # outside the working folder: the path as it is
    finally:
        warnings.showwarning = original


def test_cupti_is_torn_down_after_the_window_unless_the_script_says_otherwise():
    from types import SimpleNamespace

    from gpubottle.probes.cuda import teardown_cupti_after_window

    torch_126 = SimpleNamespace(version=SimpleNamespace(cuda="12.6"))
    env: dict[str, str] = {}
    assert teardown_cupti_after_window(torch_126, env) and env == {"TEARDOWN_CUPTI": "1"}
    mine = {"TEARDOWN_CUPTI": "0"}  # the script's own choice (CUDA graphs on an older CUDA, say)
    assert not teardown_cupti_after_window(torch_126, mine) and mine == {"TEARDOWN_CUPTI": "0"}
    for old in ("12.4", "11.8", None):  # re-attaching after a teardown could crash with CUDA graphs
        env = {}
        assert not teardown_cupti_after_window(SimpleNamespace(version=SimpleNamespace(cuda=old)), env)
        assert env == {}
    env = {}
    assert teardown_cupti_after_window(SimpleNamespace(version=SimpleNamespace(cuda="13.0")), env)


def test_the_allocators_counters_are_read_at_most_every_tenth_of_a_second(monkeypatch):
    import torch

    from gpubottle.probes import cuda as cuda_probe
    from gpubottle.probes.hooks import StepHooks

    calls = []
    now = [100.0]
    monkeypatch.setattr(cuda_probe.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 1)  # the script's own: left alone
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.cuda, "memory_stats_as_nested_dict", lambda *a: calls.append("n") or {
        "allocated_bytes": {"all": {"current": 1 << 30}}, "reserved_bytes": {"all": {"current": 2 << 30}}})

    class Rec:
        def emit(self, rec): pass

    probe = cuda_probe.CudaProbe(Rec(), StepHooks(), None)  # type: ignore[arg-type]
    for step in range(1, 201):  # 200 steps of 2 ms: 0.4 s
        probe.on_step(step)
        now[0] += 0.002
    assert 4 <= calls.count("n") <= 5 and calls == ["n"] * len(calls)  # one read of the nested dict each


def test_on_a_cpu_run_the_cuda_probe_asks_for_a_call_twice_a_second_not_every_step(monkeypatch):
    """Until the script uses CUDA the probe has nothing to read: it asks the step hub for its next
    call CUDA_RECHECK_S later (or at the profiler window's first step, where one is to open);
    once CUDA is in use, every step."""
    import sys

    import torch

    from gpubottle.options import WindowConfig
    from gpubottle.probes import cuda as cuda_probe
    from gpubottle.probes.hooks import CUDA_RECHECK_S, StepHooks

    now = [100.0]
    monkeypatch.setattr(cuda_probe.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)

    class Rec:
        def emit(self, rec): pass

    idle = cuda_probe.CudaProbe(Rec(), StepHooks(), None)  # type: ignore[arg-type]
    assert idle.on_step(1) == (sys.maxsize, 100.0 + CUDA_RECHECK_S)
    waiting = cuda_probe.CudaProbe(Rec(), StepHooks(), WindowConfig(start=40))  # type: ignore[arg-type]
    assert waiting.on_step(1) == (40, 100.0 + CUDA_RECHECK_S)
    assert waiting.on_step(40) == (sys.maxsize, 100.0 + CUDA_RECHECK_S)  # a CPU run: no window
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.cuda, "memory_stats_as_nested_dict", lambda *a: {
        "allocated_bytes": {"all": {"current": 0}}, "reserved_bytes": {"all": {"current": 0}}})
    assert idle.on_step(2) is None


def test_no_driver_is_said_as_pynvml_says_it_without_importing_pynvml(tmp_path):
    """Where NVML's library does not load (this machine: no driver), the sampler says so in pynvml's
    own words without importing pynvml (~35-50 ms of CPU on the script's core at its launch); where
    it loads, pynvml is imported and asked as before (its nvmlInit then answers for itself)."""
    import subprocess
    import sys

    from gpubottle.collect import nvml

    if nvml.library_loads():
        pytest.skip("NVML's library loads here")
    code = ("import io, sys\n"
            "from gpubottle.collect import nvml\n"
            "s = nvml.NvmlSampler(io.StringIO())\n"
            "print(s.probe(), s.reason, 'pynvml' in sys.modules)\n"
            "nvml.library_loads = lambda: True\n"  # (pynvml's own nvmlInit fails the same way)
            "s = nvml.NvmlSampler(io.StringIO())\n"
            "print(s.probe(), s.reason, 'pynvml' in sys.modules)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != nvml.BACKEND_ENV}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60).stdout.splitlines()
    said = "no NVIDIA driver (NVML unavailable: NVML Shared Library Not Found): no GPU evidence"
    assert out == [f"False {said} False", f"False {said} True"]
