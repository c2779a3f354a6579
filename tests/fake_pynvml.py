"""A stand-in for pynvml with the same functions, for a machine without an NVIDIA GPU.

Configured by the FAKE_NVML environment variable (JSON), so it also works inside the gpubottle
supervisor when named by GPUBOTTLE_NVML_BACKEND=fake_pynvml:
  {"mode": "ok" | "nodriver" | "nopermission",
   "devices": [{"name": "...", "uuid": "GPU-...", "util": 95, "mem_used": int, "mem_total": int,
                "throttle": int, "unsupported": ["pcie_tx", ...], "none": ["power", ...],
                "proc_mem": int}]}
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any

NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 - pynvml's name
    def __str__(self) -> str:
        return "NVML Shared Library Not Found"


class NVMLError_NoPermission(NVMLError):  # noqa: N801
    def __str__(self) -> str:
        return "Insufficient Permissions"


class NVMLError_NotSupported(NVMLError):  # noqa: N801
    def __str__(self) -> str:
        return "Not Supported"


def _spec() -> dict[str, Any]:
    return json.loads(os.environ.get("FAKE_NVML", '{"mode": "nodriver"}'))


def _dev(h: int) -> dict[str, Any]:
    return _spec()["devices"][h]


def _metric(h: int, name: str, value: Any) -> Any:
    d = _dev(h)
    if name in d.get("unsupported", []):
        raise NVMLError_NotSupported()
    if name in d.get("none", []):
        return None
    return value


def nvmlInit() -> None:  # noqa: N802
    mode = _spec().get("mode")
    if mode == "nodriver":
        raise NVMLError_LibraryNotFound()
    if mode == "nopermission":
        raise NVMLError_NoPermission()


def nvmlShutdown() -> None:  # noqa: N802
    pass


def nvmlDeviceGetCount() -> int:  # noqa: N802
    return len(_spec()["devices"])


def nvmlDeviceGetHandleByIndex(i: int) -> int:  # noqa: N802
    return i


def nvmlDeviceGetUUID(h: int) -> str:  # noqa: N802
    return str(_dev(h).get("uuid", f"GPU-fake-{h}"))


def nvmlDeviceGetName(h: int) -> str:  # noqa: N802
    return str(_dev(h).get("name", "Fake GPU"))


def nvmlDeviceGetUtilizationRates(h: int) -> Any:  # noqa: N802
    util = _metric(h, "util", _dev(h).get("util", 50))
    return None if util is None else SimpleNamespace(gpu=util, memory=10)


def nvmlDeviceGetMemoryInfo(h: int) -> Any:  # noqa: N802
    d = _dev(h)
    return _metric(h, "mem_used", SimpleNamespace(used=d.get("mem_used", 1 << 30),
                                                  total=d.get("mem_total", 16 << 30)))


def nvmlDeviceGetPcieThroughput(h: int, which: int) -> Any:  # noqa: N802
    return _metric(h, "pcie_tx" if which == 0 else "pcie_rx", 1000)


def nvmlDeviceGetClockInfo(h: int, which: int) -> Any:  # noqa: N802
    return _metric(h, "sm_clock", _dev(h).get("sm_clock", 1400))


def nvmlDeviceGetPowerUsage(h: int) -> Any:  # noqa: N802
    return _metric(h, "power", 250000)


def nvmlDeviceGetEnforcedPowerLimit(h: int) -> Any:  # noqa: N802
    return _metric(h, "power_limit", 300000)


def nvmlDeviceGetTemperature(h: int, which: int) -> Any:  # noqa: N802
    return _metric(h, "temp", _dev(h).get("temp", 70))


def nvmlDeviceGetCurrentClocksThrottleReasons(h: int) -> Any:  # noqa: N802
    return _metric(h, "throttle", _dev(h).get("throttle", 0))


def nvmlDeviceGetComputeRunningProcesses(h: int) -> list[Any]:  # noqa: N802
    import psutil

    used = _dev(h).get("proc_mem")
    if used is None:
        return []
    kids = psutil.Process().children(recursive=True)  # the supervisor's: the script and its workers
    return [SimpleNamespace(pid=p.pid, usedGpuMemory=used) for p in kids[:1]]
