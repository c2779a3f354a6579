"""NVML device discovery against tests/support/fake_pynvml.py (errors per device, None values, MIG,
container PIDs), in-process; a run on a fake GPU through the CLI is in tests/e2e/test_nvml_devices.py."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import fake_pynvml
import pytest

from gpubottle.analysis.nvml import nvml_evidence
from gpubottle.collect.nvml import NvmlSampler
from gpubottle.collect.nvml_devices import enumerate_devices, uuid_key, visible

A, B = "GPU-aaaaaaaa-1111-2222-3333-444444444444", "GPU-bbbbbbbb-1111-2222-3333-444444444444"
MIG1, MIG2 = "MIG-cccccccc-1111-2222-3333-444444444444", "MIG-dddddddd-1111-2222-3333-444444444444"
GIB = 1 << 30


def _fake(monkeypatch: pytest.MonkeyPatch, spec: dict) -> None:
    monkeypatch.setenv("FAKE_NVML", json.dumps(spec))


def _sampler(env: dict | None = None) -> NvmlSampler:
    s = NvmlSampler(io.StringIO(), backend=fake_pynvml, env=env or {})
    s._pid = os.getpid()  # the fake lists this process (or its first child) as the run's
    return s


def _evidence(tmp_path: Path, s: NvmlSampler, samples: int = 3, **kw: object) -> object:
    assert s.probe()
    for _ in range(samples):
        s._write(s.sample())
    path = tmp_path / "gpu.jsonl"
    path.write_text(s._out.getvalue())  # type: ignore[attr-defined]
    return nvml_evidence(str(path), (None, None), **kw)  # type: ignore[arg-type]


def test_a_device_that_refuses_to_open_is_skipped_and_named(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "ok", "devices": [{"uuid": A}, {"uuid": B, "open": "nopermission"},
                                                   {"uuid": "GPU-eeee"}]})
    s = _sampler()
    assert s.probe() is True
    assert [d.index for d in s.devices] == [0, 2]
    assert s.skipped == ["GPU 1: Insufficient Permissions"]


def test_every_device_refusing_says_so(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "ok", "devices": [{"open": "nopermission"}]})
    s = _sampler()
    assert s.probe() is False
    assert "GPU 0: Insufficient Permissions" in (s.reason or "")


def test_mig_instances_are_devices_with_mig_uuids(monkeypatch: pytest.MonkeyPatch):
    _fake(monkeypatch, {"mode": "ok", "devices": [
        {"uuid": A, "mig": [{"uuid": MIG1, "gi": 1, "ci": 0, "slot": 0, "mem_used": 3 * GIB,
                             "mem_total": 10 * GIB},
                            {"uuid": MIG2, "gi": 2, "ci": 0, "slot": 2}]},
        {"uuid": B, "mig": []}]})  # MIG-capable, MIG off
    devices, skipped = enumerate_devices(fake_pynvml)
    assert [(d.index, d.mig, d.uuid) for d in devices] == [
        (0, None, A), (0, 0, MIG1), (0, 2, MIG2), (1, None, B)]  # slot 1 empty: Not Found, no error
    assert skipped == []
    assert devices[1].label == "GPU 0 MIG 0" and devices[1].parent_uuid == A
    s = _sampler({"CUDA_VISIBLE_DEVICES": MIG1})
    assert s.probe() and [d.uuid for d in s.devices] == [MIG1]
    assert "util" not in s.devices[0].metrics and "mem_used" in s.devices[0].metrics
    values = s.sample().devices[0][1]
    assert values["mem_used"] == 3 * GIB


def test_cuda_visible_devices_by_uuid_index_and_legacy_mig():
    def dev(key: int, index: int, uuid: str, name: str = "H100", mig: int | None = None,
            gi: int | None = None, parent: str | None = None):
        from gpubottle.collect.nvml_devices import Device

        return Device(key, index, uuid, None, name=name, mig=mig, gi=gi, ci=0, parent_uuid=parent)

    same = [dev(0, 0, A), dev(1, 1, B)]
    assert [d.uuid for d in visible(same, {})[0]] == [A, B]
    assert [d.uuid for d in visible(same, {"CUDA_VISIBLE_DEVICES": "1,0"})[0]] == [B, A]
    assert visible(same, {"CUDA_VISIBLE_DEVICES": ""})[0] == []
    assert [d.uuid for d in visible(same, {"CUDA_VISIBLE_DEVICES": "1,7,0"})[0]] == [B]  # stops at 7
    assert [d.uuid for d in visible(same, {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"})[0]] == [B]
    assert visible(same, {"CUDA_VISIBLE_DEVICES": "GPU-"})[0] == []  # names both: invalid
    # Mixed GPUs, CUDA's default fastest-first order: an index cannot be mapped, all are kept.
    mixed = [dev(0, 0, A, "T4"), dev(1, 1, B, "H100")]
    kept, note = visible(mixed, {"CUDA_VISIBLE_DEVICES": "0"})
    assert len(kept) == 2 and note and "PCI_BUS_ID" in note
    kept, note = visible(mixed, {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [d.uuid for d in kept] == [A] and note is None
    migs = [dev(0, 0, A), dev(1, 0, MIG1, mig=0, gi=1, parent=A), dev(2, 0, MIG2, mig=1, gi=2, parent=A)]
    assert [d.uuid for d in visible(migs, {"CUDA_VISIBLE_DEVICES": "MIG-dddd"})[0]] == [MIG2]
    legacy = f"MIG-{A}/2/0"  # MIG-GPU-<uuid>/<gi>/<ci>
    assert [d.uuid for d in visible(migs, {"CUDA_VISIBLE_DEVICES": legacy})[0]] == [MIG2]
    assert uuid_key("GPU-AB-cd") == uuid_key("abcd") == "abcd"


def test_new_nvml_calls_first_deprecated_ones_on_old_drivers(monkeypatch: pytest.MonkeyPatch):
    spec = {"mode": "ok", "devices": [{"uuid": A, "temp": 81, "throttle": 0x40}]}
    _fake(monkeypatch, spec)

    def gone(*a: object) -> None:
        raise AssertionError("the deprecated call was used on a current driver")

    with monkeypatch.context() as m:
        m.setattr(fake_pynvml, "nvmlDeviceGetTemperature", gone)
        m.setattr(fake_pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", gone)
        s = _sampler()
        assert s.probe()
        values = s.sample().devices[0][1]
        assert values["temp"] == 81 and values["throttle"] == 0x40
    _fake(monkeypatch, dict(spec, driver="old"))  # Function Not Found for the new ones
    s = _sampler()
    assert s.probe() and {"temp", "throttle"} <= set(s.devices[0].metrics)
    values = s.sample().devices[0][1]
    assert values["temp"] == 81 and values["throttle"] == 0x40


def test_missing_pynvml_module_is_not_called_a_missing_driver(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GPUBOTTLE_NVML_BACKEND", "no_such_pynvml_module")
    s = NvmlSampler(io.StringIO(), env={})
    assert s.probe() is False
    assert "nvidia-ml-py package is not installed" in (s.reason or "")
    assert "driver" not in (s.reason or "")


def test_container_pids_fall_back_to_the_only_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    # The run's process is listed with a host PID; it is the device's only process.
    _fake(monkeypatch, {"mode": "ok", "devices": [{"uuid": A, "proc_mem": 5 * GIB, "procs": "host",
                                                   "mem_used": 6 * GIB, "mem_total": 80 * GIB}]})
    got = _evidence(tmp_path, _sampler(), run_uuids=[A[4:]], uses_cuda=True)
    (d,) = got.devices  # type: ignore[attr-defined]
    assert d.role == "run" and d.proc_mem_peak == 5 * GIB and d.proc_mem_source == "only-process"
    # Another tenant on the same device: the run's share cannot be told, and the report says so.
    _fake(monkeypatch, {"mode": "ok", "devices": [{"uuid": A, "proc_mem": 5 * GIB, "procs": "host",
                                                   "others": [GIB]}]})
    got = _evidence(tmp_path, _sampler(), run_uuids=[A[4:]], uses_cuda=True)
    (d,) = got.devices  # type: ignore[attr-defined]
    assert d.role == "run" and d.proc_mem_peak is None
    assert "process IDs are not this run's" in got.problems[0]  # type: ignore[attr-defined]


def test_pid_match_and_none_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    _fake(monkeypatch, {"mode": "ok", "devices": [{"uuid": A, "proc_mem": 5 * GIB, "proc_mem_none": True},
                                                   {"uuid": B}]})
    got = _evidence(tmp_path, _sampler(), uses_cuda=True)  # no UUIDs from torch (torch < 2.1)
    a, b = got.devices  # type: ignore[attr-defined]
    assert a.role == "run" and a.proc_mem_source == "pid" and a.proc_mem_peak is None
    assert b.role == "other"


def test_mig_instance_is_the_runs_and_its_parent_lends_the_clocks(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path):
    _fake(monkeypatch, {"mode": "ok", "devices": [
        {"uuid": A, "throttle": 0x40, "mig": [{"uuid": MIG1, "slot": 0, "gi": 1, "proc_mem": GIB},
                                             {"uuid": MIG2, "slot": 1, "gi": 2}]}]})
    got = _evidence(tmp_path, _sampler(), run_uuids=[MIG1[4:]], uses_cuda=True)
    roles = {(d.index, d.mig): d.role for d in got.devices}  # type: ignore[attr-defined]
    assert roles == {(0, None): "parent", (0, 0): "run", (0, 1): "other"}
    parent = got.devices[0]  # type: ignore[attr-defined]
    assert parent.throttle == {"hw-thermal": 1.0}

