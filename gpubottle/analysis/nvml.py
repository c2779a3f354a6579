"""NVML samples (gpu.jsonl) summarised per device over the measured window."""

from __future__ import annotations

import statistics
from typing import Any

from gpubottle.collect.nvml import THROTTLE_BITS
from gpubottle.evidence import NvmlDevice
from gpubottle.wire import GpuDevices, GpuSample, read_records


def nvml_evidence(path: str, window: tuple[float | None, float | None]) -> list[NvmlDevice]:
    devices: dict[int, NvmlDevice] = {}
    rows: list[GpuSample] = []
    records, _bad = read_records(path)
    for rec in records:
        if isinstance(rec, GpuDevices):
            for desc in rec.devices:
                devices[int(desc["index"])] = NvmlDevice(index=int(desc["index"]), name=desc.get("name"))
                devices[int(desc["index"])].missing = [
                    m for m in ("util", "mem_used", "pcie_tx", "sm_clock", "power", "temp",
                                "throttle") if m not in desc.get("metrics", [])]
        elif isinstance(rec, GpuSample):
            rows.append(rec)
    lo, hi = window
    inside = [r for r in rows if (lo is None or r.t >= lo) and (hi is None or r.t <= hi)] or rows
    per: dict[int, dict[str, list[Any]]] = {}
    for r in inside:
        for idx, values in r.devices:
            bucket = per.setdefault(int(idx), {})
            for k, v in values.items():
                if v is not None:
                    bucket.setdefault(k, []).append(v)
    for idx, vals in per.items():
        d = devices.setdefault(idx, NvmlDevice(index=idx))
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
    return [devices[k] for k in sorted(devices)]
