"""A stand-in for the parts of torch.cuda that gpubottle's probes call, on a machine without a GPU.

A test script calls install() after `import torch`; the probes then take the same calls as on a GPU
(is_available, is_initialized, memory_allocated/reserved, memory_stats, get_device_properties,
mem_get_info, set_sync_debug_mode). Tensors report is_cuda, so the memory census counts the
script's real (CPU) tensors as if they lived on the device. Sync debug mode "warn" makes .item()
warn the way torch's C++ does (from the caller's line). Sizes come from the FAKE_CUDA environment
variable (JSON): {"total": bytes, "allocated": bytes, "reserved": bytes, "free": bytes,
"sync_mode": the script's own sync debug mode, "grow_per_s": allocated bytes added per second,
"peak": the allocator's peak before the script's first reset_peak_memory_stats (which, as in torch,
brings it down to the current allocation), "uuid": the device's UUID as torch prints it (no "GPU-")}.
torch.cuda.synchronize() never warns in sync debug mode, like the real one.

The device runs asynchronously, as a real one does (`DEVICE`): a script queues GPU work with
`kernel(seconds)` and goes on while it runs; the host waits only at a sync point (synchronize(),
`.item()`, `int()`, `float()` of a tensor the script marked as on the device with `on_device(t)`)
or when `depth` kernels are queued (FAKE_CUDA "depth", default 1024). `torch.cuda.Event` records
on that queue and tells device times, as the real one does. `truth()` is what the device did:
when each step's work finished and how long it sat idle, for a test to hold gpubottle's numbers
against.
"""

from __future__ import annotations

import json
import os
import time
import warnings
import weakref
from collections import deque
from types import SimpleNamespace
from typing import Any

GIB = 1 << 30


class FakeDevice:
    """One stream: kernels run one after another in real time, from when they are queued or when
    the one before ends, whichever is later."""

    def __init__(self, depth: int = 1024) -> None:
        self.depth = depth
        self.busy_until = 0.0
        self.idle_s = 0.0  # time the device sat with nothing to run, after its first kernel
        self._ends: deque[float] = deque()
        self._on_device: set[int] = set()  # ids of the tensors marked as on the device

    def launch(self, seconds: float) -> None:
        now = time.monotonic()
        while self._ends and self._ends[0] <= now:
            self._ends.popleft()
        if len(self._ends) >= self.depth:  # the launch queue is full: the host waits for a slot
            time.sleep(max(0.0, self._ends[0] - now))
            now = time.monotonic()
            self._ends.popleft()
        if self.busy_until and now > self.busy_until:
            self.idle_s += now - self.busy_until
        start = max(now, self.busy_until)
        self.busy_until = start + seconds
        self._ends.append(self.busy_until)

    def drain(self) -> None:
        _wait_for(self.busy_until)

    def finished_at(self) -> float:
        """When the work queued so far finishes (now, if the device is idle)."""
        return max(time.monotonic(), self.busy_until)


# A real sync waits inside torch's C code: no Python frame of its own, so stack samples land on the
# script's line that called .item(). The fake's wait is compiled under a name that, like torch's
# own files, is not the user's code.
_LIB: dict[str, Any] = {"time": time}
exec(compile("def _wait_for(t):\n    w = t - time.monotonic()\n    if w > 0:\n        time.sleep(w)\n",
             "<torch (fake CUDA)>", "exec"), _LIB)
_wait_for = _LIB["_wait_for"]

DEVICE = FakeDevice()


def kernel(seconds: float) -> None:
    """Queue `seconds` of GPU work."""
    DEVICE.launch(seconds)


def on_device(t: Any) -> Any:
    """Mark a tensor as living on the device: reading it on the host waits for the device."""
    DEVICE._on_device.add(id(t))
    weakref.finalize(t, DEVICE._on_device.discard, id(t))
    return t


class Event:
    """torch.cuda.Event on the fake device's one stream."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t = DEVICE.finished_at()

    def query(self) -> bool:
        return self.t is not None and time.monotonic() >= self.t

    def synchronize(self) -> None:
        if self.t is not None:
            _wait_for(self.t)

    def elapsed_time(self, end: Event) -> float:
        if self.t is None or end.t is None or not (self.query() and end.query()):
            raise RuntimeError("CUDA error: device not ready")
        return (end.t - self.t) * 1000.0


_TRUTH: list[list[float]] = []


def step_done() -> None:
    """The script's step boundary, for the truth: when its work finishes, the idle so far."""
    _TRUTH.append([DEVICE.busy_until, DEVICE.idle_s])


def truth() -> dict[str, Any]:
    """Each step's device time and idle time (from the second step), as the device saw them."""
    ends = [e for e, _ in _TRUTH]
    idles = [i for _, i in _TRUTH]
    return {"step_s": [b - a for a, b in zip(ends, ends[1:])],
            "idle_s": [b - a for a, b in zip(idles, idles[1:])]}


def write_truth() -> None:
    path = os.environ.get("FAKE_TRUTH")
    if path:
        with open(path, "w") as fh:
            json.dump(truth(), fh)


def install() -> dict[str, Any]:
    import torch

    cfg: dict[str, Any] = {"total": 80 * GIB, "allocated": 10 * GIB, "reserved": 12 * GIB,
                           "free": 60 * GIB}
    cfg.update(json.loads(os.environ.get("FAKE_CUDA", "{}")))
    DEVICE.depth = int(cfg.get("depth", 1024))
    state: dict[str, Any] = {"sync_mode": cfg.get("sync_mode", 0),
                             "peak": max(cfg.get("peak", 0), cfg["allocated"])}
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.is_initialized = lambda: True
    cuda.current_device = lambda: 0
    cuda.device_count = lambda: 1
    t0 = time.monotonic()
    cuda.memory_allocated = lambda device=None: int(cfg["allocated"] + cfg.get("grow_per_s", 0)
                                                    * (time.monotonic() - t0))
    cuda.memory_reserved = lambda device=None: cfg["reserved"]
    cuda.memory_stats_as_nested_dict = lambda device=None: {  # the shape torch's C function returns
        "allocated_bytes": {"all": {"current": cuda.memory_allocated(), "peak": state["peak"]}},
        "reserved_bytes": {"all": {"current": cfg["reserved"], "peak": cfg["reserved"]}},
    }
    cuda.memory_stats = lambda device=None: {
        "allocated_bytes.all.peak": state["peak"], "reserved_bytes.all.peak": cfg["reserved"],
        "allocated_bytes.all.current": cfg["allocated"], "reserved_bytes.all.current": cfg["reserved"],
    }

    def reset_peak(device: Any) -> None:  # the C function behind torch.cuda.reset_peak_memory_stats
        state["peak"] = cfg["allocated"]

    torch._C._cuda_resetPeakMemoryStats = reset_peak
    cuda.synchronize = lambda device=None: DEVICE.drain()
    cuda.Event = Event
    cuda.is_current_stream_capturing = lambda: False
    cuda.get_device_properties = lambda device=None: SimpleNamespace(
        total_memory=cfg["total"], name="Fake GPU",
        uuid=cfg.get("uuid", "fa4e0000-0000-0000-0000-000000000000"))
    cuda.mem_get_info = lambda device=None: (cfg["free"], cfg["total"])

    def set_sync_debug_mode(mode: Any) -> None:
        state["sync_mode"] = 0 if mode in (0, "default") else mode

    cuda.set_sync_debug_mode = set_sync_debug_mode
    cuda.get_sync_debug_mode = lambda: state["sync_mode"]
    torch.Tensor.is_cuda = property(lambda self: True)  # type: ignore[assignment,method-assign]
    # The reads that wait for the device, compiled like _wait_for: stack samples taken while they
    # wait land on the script's own line, as inside torch's C code.
    lib: dict[str, Any] = {"DEVICE": DEVICE, "state": state, "warnings": warnings, "_wait_for": _wait_for}
    exec(compile(
        "def reader(real):\n"
        "    def read(self, *args):\n"
        "        on = id(self) in DEVICE._on_device\n"
        "        if state['sync_mode'] == 'warn' and (real.__name__ == 'item' or on):\n"
        "            warnings.warn('called a synchronizing CUDA operation', UserWarning, stacklevel=2)\n"
        "        if on:\n"
        "            _wait_for(DEVICE.busy_until)\n"
        "        return real(self, *args)\n"
        "    return read\n", "<torch (fake CUDA)>", "exec"), lib)
    for name in ("item", "__int__", "__float__"):
        setattr(torch.Tensor, name, lib["reader"](getattr(torch.Tensor, name)))
    return cfg
