"""A stand-in for pynvml with the same functions, for a machine without an NVIDIA GPU.

It behaves like nvidia-ml-py 13 against a real driver in the ways gpubottle depends on: errors are
NVMLError instances carrying an NVML return code, mapped to the same subclasses (NotSupported,
NoPermission, NotFound, FunctionNotFound); a device can refuse to open; MIG-enabled GPUs expose
instances through nvmlDeviceGetMigDeviceHandleByIndex (empty slots are Not Found), whose UUIDs are
`MIG-...` and which do not report utilization or clocks; the parent of MIG instances refuses the
process list to an unprivileged caller; process entries carry host PIDs (`"procs": "host"` models a
container, where none match) and usedGpuMemory None where NVML says "not available"; an old driver
lacks the newer functions (nvmlDeviceGetTemperatureV, ...ClocksEventReasons).

Configured by the FAKE_NVML environment variable (JSON), so it also works inside the gpubottle
supervisor when named by GPUBOTTLE_NVML_BACKEND=fake_pynvml:
  {"mode": "ok" | "nodriver" | "nopermission", "driver": "current" | "old",
   "latency": {"pcie_tx": seconds, ...},  # how long a call blocks (PCIe throughput: ~20 ms)
   "devices": [{"name": "...", "uuid": "GPU-...", "util": 95, "mem_used": int, "mem_total": int,
                "throttle": int, "unsupported": ["pcie_tx", ...], "none": ["power", ...],
                "open": "ok" | "nopermission",
                "proc_mem": int,  # the run's process on this device (its first child's PID)
                "procs": "tree" | "host",  # host: the run's entry carries a PID from outside
                "proc_mem_none": bool,  # usedGpuMemory not available
                "others": [bytes, ...],  # other tenants' processes, host PIDs
                "mig": [{"uuid": "MIG-...", "gi": 1, "ci": 0, "mem_used": ..., "mem_total": ...,
                         "proc_mem": ..., "procs": ..., "slot": 0}]}]}
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace
from typing import Any

NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0
NVML_DEVICE_MIG_ENABLE = 1

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
_STRINGS = {3: "Not Supported", 4: "Insufficient Permissions", 6: "Not Found",
            12: "NVML Shared Library Not Found", 13: "Function Not Found"}
HOST_PID_BASE = 4_000_000  # PIDs as the host sees them: never this namespace's


class NVMLError(Exception):
    _by_value: dict[int, type] = {}

    def __new__(cls, value: int) -> NVMLError:  # the real class picks the subclass by code
        typ = NVMLError._by_value.get(value, cls) if cls is NVMLError else cls
        obj = Exception.__new__(typ)
        obj.value = value  # type: ignore[attr-defined]
        return obj  # type: ignore[return-value]

    def __init__(self, value: int) -> None:
        super().__init__(value)

    def __str__(self) -> str:
        return _STRINGS.get(self.value, f"Unknown Error {self.value}")  # type: ignore[attr-defined]


def _subclass(name: str, value: int) -> type:
    cls = type(name, (NVMLError,), {})
    NVMLError._by_value[value] = cls
    return cls


NVMLError_NotSupported = _subclass("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NoPermission = _subclass("NVMLError_NoPermission", NVML_ERROR_NO_PERMISSION)
NVMLError_NotFound = _subclass("NVMLError_NotFound", NVML_ERROR_NOT_FOUND)
NVMLError_LibraryNotFound = _subclass("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_FunctionNotFound = _subclass("NVMLError_FunctionNotFound", NVML_ERROR_FUNCTION_NOT_FOUND)

# Calls a MIG instance's handle does not answer (utilization and clocks are the whole GPU's).
_MIG_UNSUPPORTED = {"util", "pcie_tx", "pcie_rx", "sm_clock", "power", "power_limit", "temp",
                    "throttle"}


def _spec() -> dict[str, Any]:
    return json.loads(os.environ.get("FAKE_NVML", '{"mode": "nodriver"}'))


def _dev(h: Any) -> dict[str, Any]:
    if isinstance(h, tuple):  # a MIG instance: (GPU index, slot)
        for m in _spec()["devices"][h[0]].get("mig", []):
            if m.get("slot", 0) == h[1]:
                return dict(m, _mig=True)
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    return dict(_spec()["devices"][h])


# How a call blocks for its latency: real time, or a test's fake clock (tests replace it).
sleep = time.sleep


def _metric(h: Any, name: str, value: Any) -> Any:
    wait = _spec().get("latency", {}).get(name)
    if wait:
        sleep(float(wait))
    d = _dev(h)
    if name in d.get("unsupported", []) or (d.get("_mig") and name in _MIG_UNSUPPORTED):
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    if not isinstance(h, tuple) and d.get("mig") and name == "util":
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)  # a MIG-enabled GPU has no utilization of its own
    if name in d.get("none", []):
        return None
    return value


def _new_function() -> None:
    if _spec().get("driver") == "old":
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)


def nvmlInit() -> None:  # noqa: N802
    mode = _spec().get("mode")
    if mode == "nodriver":
        raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)
    if mode == "nopermission":
        raise NVMLError(NVML_ERROR_NO_PERMISSION)


def nvmlShutdown() -> None:  # noqa: N802
    pass


def nvmlDeviceGetCount() -> int:  # noqa: N802
    return len(_spec()["devices"])


def nvmlDeviceGetHandleByIndex(i: int) -> int:  # noqa: N802
    if _spec()["devices"][i].get("open") == "nopermission":  # a cgroup-restricted GPU
        raise NVMLError(NVML_ERROR_NO_PERMISSION)
    return i


def nvmlDeviceGetUUID(h: Any) -> str:  # noqa: N802
    if isinstance(h, tuple):
        return str(_dev(h)["uuid"])
    return str(_dev(h).get("uuid", f"GPU-fake-{h}"))


def nvmlDeviceGetName(h: Any) -> str:  # noqa: N802
    return str(_dev(h[0] if isinstance(h, tuple) else h).get("name", "Fake GPU"))


def nvmlDeviceGetMigMode(h: Any) -> list[int]:  # noqa: N802
    d = _dev(h)
    if "mig" not in d:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)  # not a MIG-capable GPU
    return [1 if d["mig"] else 0, 1 if d["mig"] else 0]


def nvmlDeviceGetMaxMigDeviceCount(h: Any) -> int:  # noqa: N802
    return 7


def nvmlDeviceGetMigDeviceHandleByIndex(h: Any, j: int) -> tuple[int, int]:  # noqa: N802
    _dev((h, j))  # Not Found for an empty slot
    return (h, j)


def nvmlDeviceGetGpuInstanceId(h: Any) -> int:  # noqa: N802
    return int(_dev(h).get("gi", 0))


def nvmlDeviceGetComputeInstanceId(h: Any) -> int:  # noqa: N802
    return int(_dev(h).get("ci", 0))


def nvmlDeviceGetUtilizationRates(h: Any) -> Any:  # noqa: N802
    util = _metric(h, "util", _dev(h).get("util", 50))
    return None if util is None else SimpleNamespace(gpu=util, memory=10)


def nvmlDeviceGetMemoryInfo(h: Any) -> Any:  # noqa: N802
    d = _dev(h)
    return _metric(h, "mem_used", SimpleNamespace(used=d.get("mem_used", 1 << 30),
                                                  total=d.get("mem_total", 16 << 30)))


def nvmlDeviceGetPcieThroughput(h: Any, which: int) -> Any:  # noqa: N802
    return _metric(h, "pcie_tx" if which == 0 else "pcie_rx", 1000)


def nvmlDeviceGetClockInfo(h: Any, which: int) -> Any:  # noqa: N802
    return _metric(h, "sm_clock", _dev(h).get("sm_clock", 1400))


def nvmlDeviceGetPowerUsage(h: Any) -> Any:  # noqa: N802
    return _metric(h, "power", 250000)


def nvmlDeviceGetEnforcedPowerLimit(h: Any) -> Any:  # noqa: N802
    return _metric(h, "power_limit", 300000)


def nvmlDeviceGetTemperatureV(h: Any, sensor: int) -> Any:  # noqa: N802
    _new_function()
    if _spec().get("temp_v") == "unsupported":  # some devices refuse the newer call only
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return _metric(h, "temp", _dev(h).get("temp", 70))


def nvmlDeviceGetTemperature(h: Any, which: int) -> Any:  # noqa: N802 - deprecated, kept
    return _metric(h, "temp", _dev(h).get("temp", 70))


def nvmlDeviceGetCurrentClocksEventReasons(h: Any) -> Any:  # noqa: N802
    _new_function()
    return _metric(h, "throttle", _dev(h).get("throttle", 0))


def nvmlDeviceGetCurrentClocksThrottleReasons(h: Any) -> Any:  # noqa: N802 - deprecated, kept
    return _metric(h, "throttle", _dev(h).get("throttle", 0))


def nvmlDeviceGetComputeRunningProcesses(h: Any) -> list[Any]:  # noqa: N802
    import psutil

    d = _dev(h)
    if not isinstance(h, tuple) and d.get("mig"):
        raise NVMLError(NVML_ERROR_NO_PERMISSION)  # the aggregate needs privileges
    out = []
    used = d.get("proc_mem")
    if used is not None:
        kids = psutil.Process().children(recursive=True)  # the supervisor's: the script and workers
        pid = kids[0].pid if kids else os.getpid()
        if d.get("procs") == "host":
            pid += HOST_PID_BASE
        out.append(SimpleNamespace(pid=pid, usedGpuMemory=None if d.get("proc_mem_none") else used))
    for i, other in enumerate(d.get("others", [])):
        out.append(SimpleNamespace(pid=HOST_PID_BASE + 1000 + i, usedGpuMemory=other))
    return out
