"""NVML sampling of the GPUs the script may use, from the supervisor.

Probed once, degraded per metric: no driver or no permission makes the whole collector "missing"
with the reason; a metric a device does not support (or that returns None) is dropped for that
device and the rest go on. The backend is the pynvml module, or any module with the same functions
(GPUBOTTLE_NVML_BACKEND names one: that is how tests stand in for a GPU this machine lacks).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import IO, Any

from gpubottle.collect.nvml_devices import Device, enumerate_devices, visible
from gpubottle.wire import GpuDevices, GpuSample, encode

BACKEND_ENV = "GPUBOTTLE_NVML_BACKEND"


def _newest(n: Any, names: tuple[str, ...], h: Any, *args: Any) -> Any:
    """The newest of several NVML calls that both the library and the driver have: the older one is
    deprecated (it goes with CUDA 14), the newer one is missing from old drivers and old pynvml."""
    last: BaseException | None = None
    for name in names:
        fn = getattr(n, name, None)
        if fn is None:
            continue
        try:
            return fn(h, *args)
        except Exception as exc:
            text = str(exc).lower()
            # The newer call missing from the driver, or refused by this device: the older one may
            # answer (seen both ways on real drivers).
            if "function not found" not in text and "not supported" not in text:
                raise
            last = exc
    raise last or AttributeError(names[-1])


_TEMP = ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature")
_THROTTLE = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")

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
    "temp": lambda n, h: _newest(n, _TEMP, h, n.NVML_TEMPERATURE_GPU),
    "throttle": lambda n, h: _newest(n, _THROTTLE, h),
}
# Throttle-reason bits that cost speed (idle and application-clock settings do not). The software
# power cap is how a GPU at full load normally holds its power limit: said, never a warning.
THROTTLE_BITS = {0x4: "sw-power-cap", 0x8: "hw-slowdown", 0x20: "sw-thermal", 0x40: "hw-thermal",
                 0x80: "hw-power-brake"}
NORMAL_AT_FULL_LOAD = ("sw-power-cap",)
# Metrics slow to read (nvmlDeviceGetPcieThroughput waits ~20 ms per call, per direction): read
# less often when a sample's reads take a large part of the sampling period.
SLOW_METRICS = ("pcie_tx", "pcie_rx")


# What pynvml says where NVML's library does not load (NVMLError_LibraryNotFound).
NO_LIBRARY = "NVML Shared Library Not Found"
LIBRARY = "libnvidia-ml.so.1"  # as pynvml's nvmlInit loads it on Linux


def library_loads() -> bool:
    """Whether NVML's library loads (dlopen, as pynvml's nvmlInit does on Linux; elsewhere assumed)."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL(LIBRARY)
    except OSError:
        return False
    return True


def load_backend() -> ModuleType:
    """The NVML module (pynvml, or GPUBOTTLE_NVML_BACKEND's). Where pynvml is installed but NVML's
    library does not load (no driver: its nvmlInit would fail), OSError with pynvml's own words
    before importing it: its ~7000 lines of ctypes structures cost ~35-50 ms of CPU on the core
    the script starts on, beside the launch (issue 32: gpubottle's start is the run's cost)."""
    name = os.environ.get(BACKEND_ENV) or "pynvml"
    if name == "pynvml" and importlib.util.find_spec(name) is not None and not library_loads():
        raise OSError(NO_LIBRARY)
    return importlib.import_module(name)


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    low = text.lower()
    if isinstance(exc, ModuleNotFoundError):
        return (f"the nvidia-ml-py package is not installed ({text}; pip install nvidia-ml-py): "
                "no GPU evidence")
    if "not found" in low or "library" in low or "driver not loaded" in low or isinstance(
            exc, (ImportError, OSError)):
        return f"no NVIDIA driver (NVML unavailable: {text}): no GPU evidence"
    if "permission" in low or "no_permission" in low:
        return f"NVML refused access ({text})"
    return f"NVML failed: {text}"


class NvmlSampler:
    def __init__(self, out: IO[str], interval: float = 0.5, backend: ModuleType | None = None,
                 env: Mapping[str, str] | None = None, now: Callable[[], float] = time.monotonic,
                 wait: Callable[[float], bool] | None = None) -> None:
        """`now` and `wait` (sleep up to that many seconds; True once stopped) are the schedule's
        clock: tests drive the sampler on a fake one."""
        self._out = out
        self.interval = interval
        self._backend = backend
        self._env = os.environ if env is None else env
        self.ok = False
        self.reason: str | None = None
        self.devices: list[Device] = []
        self.skipped: list[str] = []  # devices NVML would not open, and why
        self.note: str | None = None  # why the visible set could not be narrowed down
        self._stop = threading.Event()
        self._now = now
        self._wait = wait or self._stop.wait
        self._thread: threading.Thread | None = None
        self._pid = 0
        self.slow_every = 1  # read the slow metrics every this many samples
        self._count = 0

    def probe(self) -> bool:
        try:
            n = self._backend or load_backend()
            self._backend = n
            n.nvmlInit()
        except Exception as exc:  # every failure here means: no GPU evidence, and why
            self.reason = _reason(exc)
            return False
        try:
            found, self.skipped = enumerate_devices(n)
        except Exception as exc:  # the count itself failed
            self.reason = _reason(exc)
            return False
        self.devices, self.note = visible(found, self._env)
        for d in self.devices:
            for name, read in _METRICS.items():
                try:
                    if read(n, d.handle) is not None:
                        d.metrics.append(name)
                except Exception:
                    continue  # this device does not offer this metric
        if not self.devices:
            self.reason = "no GPU visible to the script (CUDA_VISIBLE_DEVICES, or no device)"
            if self.skipped:
                self.reason += "; NVML would not open " + "; ".join(self.skipped)
            return False
        self.ok = True
        self._write(GpuDevices([d.describe() for d in self.devices], self.skipped, self.note))
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
        """One reading of every device, stamped with the middle of the time the reads took (with
        eight GPUs they can take a third of a second)."""
        n = self._backend
        t0 = self._now()
        per_dev = []
        tree = self._tree_pids()
        slow = self._count % self.slow_every == 0
        self._count += 1
        for d in self.devices:
            values: dict[str, Any] = {}
            for name in list(d.metrics):
                if name in SLOW_METRICS and not slow:
                    continue
                try:
                    v = _METRICS[name](n, d.handle)
                except Exception:
                    d.metrics.remove(name)  # stopped working: drop it, keep the rest
                    continue
                if v is not None:
                    values[name] = v
            values.update(self._process_memory(d.handle, tree))
            per_dev.append([d.key, values])
        return GpuSample(round((t0 + self._now()) / 2, 4), per_dev)

    def _process_memory(self, handle: Any, tree: set[int]) -> dict[str, Any]:
        """pid_match: NVML lists one of the run's PIDs; proc_mem: their memory on the device;
        nprocs: how many processes use it; solo_mem: the memory of the only one, if one. NVML
        reports the host's PIDs: inside a container none match, and the analysis falls back to
        solo_mem while the run is the device's only user."""
        n: Any = self._backend
        try:
            procs = list(n.nvmlDeviceGetComputeRunningProcesses(handle) or [])
        except Exception:
            return {}
        mine = [p for p in procs if getattr(p, "pid", None) in tree]
        # usedGpuMemory is None where NVML says "not available" (MIG, no privilege)
        used = [int(p.usedGpuMemory) for p in mine if getattr(p, "usedGpuMemory", None) is not None]
        out: dict[str, Any] = {"nprocs": len(procs)}
        if mine:
            out["pid_match"] = 1
        if used:
            out["proc_mem"] = sum(used)
        if len(procs) == 1 and getattr(procs[0], "usedGpuMemory", None) is not None:
            out["solo_mem"] = int(procs[0].usedGpuMemory)
        return out

    def _tree_pids(self) -> set[int]:
        try:
            import psutil

            root = psutil.Process(self._pid)
            return {self._pid} | {c.pid for c in root.children(recursive=True)}
        except Exception:
            return {self._pid}

    def _loop(self) -> None:
        """A sample every `interval` on the clock (not after it: the reads' own time would stretch
        the period); when they take more than half of it, the slow metrics are read less often."""
        next_t = self._now()
        while True:
            next_t += self.interval
            delay = next_t - self._now()
            if delay < 0:  # fell behind: skip ahead rather than read back to back
                next_t, delay = self._now(), 0.0
            if self._wait(delay):
                return
            t0 = self._now()
            try:
                self._write(self.sample())
            except Exception:
                continue
            if self._now() - t0 > 0.5 * self.interval and self.slow_every < 16:
                self.slow_every *= 2

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
