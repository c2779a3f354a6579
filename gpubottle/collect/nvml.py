"""NVML sampling of the GPUs the script may use, from the supervisor.

Probed once, degraded per metric: no driver or no permission makes the whole collector "missing"
with the reason; a metric a device does not support (or that returns None) is dropped for that
device and the rest go on. The backend is the pynvml module, or any module with the same functions
(GPUBOTTLE_NVML_BACKEND names one: that is how tests stand in for a GPU this machine lacks).
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import IO, Any

from gpubottle.wire import GpuDevices, GpuSample, encode

BACKEND_ENV = "GPUBOTTLE_NVML_BACKEND"

# name -> (how to read it from the backend for a device handle)
_METRICS: dict[str, Callable[[Any, Any], Any]] = {
    "util": lambda n, h: n.nvmlDeviceGetUtilizationRates(h).gpu,
    "mem_used": lambda n, h: n.nvmlDeviceGetMemoryInfo(h).used,
    "mem_total": lambda n, h: n.nvmlDeviceGetMemoryInfo(h).total,
    "pcie_tx": lambda n, h: n.nvmlDeviceGetPcieThroughput(h, n.NVML_PCIE_UTIL_TX_BYTES),  # KB/s
    "pcie_rx": lambda n, h: n.nvmlDeviceGetPcieThroughput(h, n.NVML_PCIE_UTIL_RX_BYTES),
    "sm_clock": lambda n, h: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
    "power": lambda n, h: n.nvmlDeviceGetPowerUsage(h),  # mW
    "power_limit": lambda n, h: n.nvmlDeviceGetEnforcedPowerLimit(h),
    "temp": lambda n, h: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
    "throttle": lambda n, h: n.nvmlDeviceGetCurrentClocksThrottleReasons(h),
}
# Throttle-reason bits that cost speed (idle and application-clock settings do not).
THROTTLE_BITS = {0x4: "sw-power-cap", 0x8: "hw-slowdown", 0x20: "sw-thermal", 0x40: "hw-thermal",
                 0x80: "hw-power-brake"}


def load_backend() -> ModuleType:
    name = os.environ.get(BACKEND_ENV) or "pynvml"
    return importlib.import_module(name)


def visible_indices(count: int, env: Mapping[str, str] | None = None, uuids: list[str] | None = None
                    ) -> list[int]:
    """NVML indices of the devices CUDA_VISIBLE_DEVICES lets the script use (all when unset)."""
    raw = (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return list(range(count))
    out: list[int] = []
    for item in (x.strip() for x in raw.split(",")):
        if not item:
            break
        if item.isdigit():
            idx = int(item)
            if idx >= count:
                break  # CUDA stops at the first invalid entry
            out.append(idx)
        elif uuids is not None:
            match = [i for i, u in enumerate(uuids) if u.startswith(item) or u == f"GPU-{item}"]
            if not match:
                break
            out.append(match[0])
        else:
            break
    return out


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    low = text.lower()
    if "not found" in low or "library" in low or isinstance(exc, (ImportError, OSError)):
        return f"no NVIDIA driver (NVML unavailable: {text}): no GPU evidence"
    if "permission" in low or "no_permission" in low:
        return f"NVML refused access ({text})"
    return f"NVML failed: {text}"


class NvmlSampler:
    def __init__(self, out: IO[str], interval: float = 0.5, backend: ModuleType | None = None) -> None:
        self._out = out
        self.interval = interval
        self._backend = backend
        self.ok = False
        self.reason: str | None = None
        self.devices: list[dict[str, Any]] = []  # index, name, handle, supported metrics
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def probe(self) -> bool:
        try:
            n = self._backend or load_backend()
            self._backend = n
            n.nvmlInit()
        except Exception as exc:  # every failure here means: no GPU evidence, and why
            self.reason = _reason(exc)
            return False
        try:
            count = int(n.nvmlDeviceGetCount())
            handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            uuids = []
            for h in handles:
                try:
                    uuids.append(str(n.nvmlDeviceGetUUID(h)))
                except Exception:
                    uuids.append("")
            for idx in visible_indices(count, uuids=uuids):
                h = handles[idx]
                supported = []
                for name, read in _METRICS.items():
                    try:
                        if read(n, h) is not None:
                            supported.append(name)
                    except Exception:
                        continue  # this device does not offer this metric
                try:
                    dev_name = str(n.nvmlDeviceGetName(h))
                except Exception:
                    dev_name = None
                self.devices.append({"index": idx, "name": dev_name, "handle": h, "metrics": supported})
        except Exception as exc:
            self.reason = _reason(exc)
            return False
        if not self.devices:
            self.reason = "no GPU visible to the script (CUDA_VISIBLE_DEVICES, or no device)"
            return False
        self.ok = True
        desc = [{"index": d["index"], "name": d["name"], "metrics": d["metrics"]} for d in self.devices]
        self._write(GpuDevices(desc))
        return True

    def start(self, pid: int) -> None:
        self._pid = pid
        if not self.probe():
            return
        self._thread = threading.Thread(target=self._loop, name="gpubottle-nvml", daemon=True)
        self._thread.start()

    def _write(self, record: Any) -> None:
        try:
            self._out.write(encode(record) + "\n")
            self._out.flush()
        except (OSError, ValueError):
            pass

    def sample(self) -> GpuSample:
        n = self._backend
        now = round(time.monotonic(), 4)
        per_dev = []
        for d in self.devices:
            values: dict[str, Any] = {}
            for name in list(d["metrics"]):
                try:
                    v = _METRICS[name](n, d["handle"])
                except Exception:
                    d["metrics"].remove(name)  # stopped working: drop it, keep the rest
                    continue
                if v is not None:
                    values[name] = v
            values["proc_mem"] = self._process_memory(d["handle"])
            per_dev.append([d["index"], values])
        return GpuSample(now, per_dev)

    def _process_memory(self, handle: Any) -> int | None:
        n = self._backend
        try:
            procs = n.nvmlDeviceGetComputeRunningProcesses(handle)  # type: ignore[union-attr]
        except Exception:
            return None
        total = 0
        found = False
        for p in procs or []:
            if getattr(p, "pid", None) in self._tree_pids():
                used = getattr(p, "usedGpuMemory", None)
                if used is not None:
                    total += int(used)
                    found = True
        return total if found else None

    def _tree_pids(self) -> set[int]:
        try:
            import psutil

            root = psutil.Process(self._pid)
            return {self._pid} | {c.pid for c in root.children(recursive=True)}
        except Exception:
            return {self._pid}

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._write(self.sample())
            except Exception:
                continue

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.ok:
            try:
                self._backend.nvmlShutdown()  # type: ignore[union-attr]
            except Exception:
                pass

    def status(self) -> dict[str, object]:
        return {"ok": self.ok, "reason": self.reason}
