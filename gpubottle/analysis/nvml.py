"""NVML samples (gpu.jsonl) summarised per device over the measured window, and which devices are
the run's own.

A device is the run's when the script's torch reported its UUID (CudaDevices), or when NVML listed
one of the run's PIDs on it. Only the run's devices may decide a verdict: another tenant's full or
throttled GPU on the same machine is not this run's problem. NVML lists PIDs of the host's namespace,
so inside a container no PID matches; then, while the run is the only process on its device, that
process's memory is the run's (said so in `proc_mem_source`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from gpubottle.collect.nvml import THROTTLE_BITS
from gpubottle.collect.nvml_devices import uuid_key
from gpubottle.evidence import NvmlDevice
from gpubottle.wire import GpuDevices, GpuSample, read_records

# What a device answered (the rest are `missing`); host to GPU is PCIe rx (received by the GPU).
_METRICS = ("util", "mem_used", "pcie_rx", "pcie_tx", "sm_clock", "power", "temp", "throttle")


@dataclass
class NvmlReading:
    devices: list[NvmlDevice] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # devices skipped, ownership unknown


def nvml_evidence(path: str, window: tuple[float | None, float | None],
                  run_uuids: list[str] | None = None, uses_cuda: bool = False) -> NvmlReading:
    out = NvmlReading()
    devices: dict[int, NvmlDevice] = {}
    rows: list[GpuSample] = []
    records, _bad = read_records(path)
    for rec in records:
        if isinstance(rec, GpuDevices):
            for desc in rec.devices:
                key = int(desc.get("key", desc["index"]))  # files before keys: the index was the key
                devices[key] = NvmlDevice(
                    index=int(desc["index"]), name=desc.get("name"), uuid=desc.get("uuid"),
                    mig=desc.get("mig"), missing=[m for m in _METRICS if m not in desc.get("metrics", [])])
            out.problems += [f"NVML would not open {s}" for s in rec.skipped or []]
            if rec.note:
                out.problems.append(rec.note)
        elif isinstance(rec, GpuSample):
            rows.append(rec)
    lo, hi = window
    inside = [r for r in rows if (lo is None or r.t >= lo) and (hi is None or r.t <= hi)]
    if not inside and lo is not None and hi is not None and rows:
        # Measured steps shorter than the sampling interval: the samples on either side of them stand
        # for them, not the whole run's (its idle start-up included).
        inside = [r for r in rows if r.t < lo][-1:] + [r for r in rows if r.t > hi][:1]
        out.problems.append("no NVML sample fell within the measured steps (shorter than the sampling "
                            "interval): the samples just before and after them stand for them")
    elif not inside:
        inside = rows
    per: dict[int, dict[str, list[Any]]] = {}
    for r in inside:
        for key, values in r.devices:
            bucket = per.setdefault(int(key), {})
            for k, v in values.items():
                if v is not None:
                    bucket.setdefault(k, []).append(v)
    for key, vals in per.items():
        _summarise(devices.setdefault(key, NvmlDevice(index=key)), vals)
    _assign_roles(devices, per, run_uuids or [], uses_cuda, out.problems)
    out.devices = [devices[k] for k in sorted(devices)]
    return out


def _summarise(d: NvmlDevice, vals: dict[str, list[Any]]) -> None:
    d.samples = max((len(v) for v in vals.values()), default=0)
    if vals.get("util"):
        u = sorted(float(x) / 100 for x in vals["util"])
        d.util_mean = statistics.fmean(u)
        d.util_p10 = u[len(u) // 10]
    if vals.get("mem_used"):
        d.mem_used_peak = int(max(vals["mem_used"]))
    if vals.get("mem_total"):
        d.mem_total = int(max(vals["mem_total"]))
    if vals.get("proc_mem"):
        d.proc_mem_peak = int(max(vals["proc_mem"]))
    if vals.get("pid_match") or vals.get("proc_mem"):  # files before pid_match: proc_mem meant a match
        d.proc_mem_source = "pid"
    if vals.get("pcie_tx"):
        d.pcie_tx_mean = statistics.fmean(vals["pcie_tx"]) * 1024
    if vals.get("pcie_rx"):
        d.pcie_rx_mean = statistics.fmean(vals["pcie_rx"]) * 1024
    if vals.get("sm_clock"):
        d.sm_clock_mean = statistics.fmean(vals["sm_clock"])
        d.sm_clock_max = float(max(vals["sm_clock"]))
    if vals.get("power"):
        d.power_mean_w = statistics.fmean(vals["power"]) / 1000
    if vals.get("power_limit"):
        d.power_limit_w = float(max(vals["power_limit"])) / 1000
    if vals.get("temp"):
        d.temp_max = float(max(vals["temp"]))
    if vals.get("throttle"):
        n = len(vals["throttle"])
        for bit, name in THROTTLE_BITS.items():
            hits = sum(1 for x in vals["throttle"] if int(x) & bit)
            if hits:
                d.throttle[name] = round(hits / n, 3)


def _assign_roles(by_key: dict[int, NvmlDevice], per: dict[int, dict[str, list[Any]]],
                  run_uuids: list[str], uses_cuda: bool, problems: list[str]) -> None:
    ordered = [by_key[k] for k in sorted(by_key)]
    wanted = {uuid_key(u) for u in run_uuids if u}
    # A GPU split into MIG instances lists every instance's processes (to root): the run's PID there
    # says nothing of which instance is the run's, and the others' memory is not the run's.
    split = {d.index for d in ordered if d.mig is not None}
    for d in ordered:
        if d.mig is None and d.index in split and d.proc_mem_source == "pid":
            d.proc_mem_source, d.proc_mem_peak = None, None
        if d.proc_mem_source == "pid" or d.uuid and uuid_key(d.uuid) in wanted:
            d.role = "run"
        else:
            d.role = "other"
    if uses_cuda and not wanted and not any(d.role == "run" for d in ordered):
        # No UUIDs from the script (torch < 2.1) and no PID matched: the one device it could use.
        leaves = [d for d in ordered if d.mig is not None or not any(
            c.mig is not None and c.index == d.index for c in ordered)]
        if len(leaves) == 1:
            leaves[0].role = "run"
        else:
            for d in ordered:
                d.role = None
            problems.append("which GPU the run used is unknown (no UUID from torch, no PID match): "
                            "no verdict from NVML's per-device readings")
    for d in ordered:
        if d.role == "other" and d.mig is None and any(
                c.role == "run" and c.mig is not None and c.index == d.index for c in ordered):
            d.role = "parent"  # the physical GPU of the run's MIG instance: its clocks are the run's
    for key, d in by_key.items():
        if d.role != "run" or d.proc_mem_source == "pid":
            continue
        vals = per.get(key, {})
        counts = vals.get("nprocs") or []
        if counts and max(counts) <= 1 and vals.get("solo_mem"):
            d.proc_mem_peak = int(max(vals["solo_mem"]))
            d.proc_mem_source = "only-process"
        elif counts and max(counts) > 1:
            problems.append(f"{d.label}: NVML's process IDs are not this run's (a container's PID "
                            "namespace?) and other processes share the device: the run's own "
                            "memory on it is unknown")
