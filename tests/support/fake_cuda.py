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
torch.cuda.synchronize() is a no-op that, like the real one, never warns in sync debug mode.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from types import SimpleNamespace
from typing import Any

GIB = 1 << 30


def install() -> dict[str, Any]:
    import torch

    cfg: dict[str, Any] = {"total": 80 * GIB, "allocated": 10 * GIB, "reserved": 12 * GIB,
                           "free": 60 * GIB}
    cfg.update(json.loads(os.environ.get("FAKE_CUDA", "{}")))
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
    cuda.memory_stats = lambda device=None: {
        "allocated_bytes.all.peak": state["peak"], "reserved_bytes.all.peak": cfg["reserved"],
        "allocated_bytes.all.current": cfg["allocated"], "reserved_bytes.all.current": cfg["reserved"],
    }

    def reset_peak(device: Any) -> None:  # the C function behind torch.cuda.reset_peak_memory_stats
        state["peak"] = cfg["allocated"]

    torch._C._cuda_resetPeakMemoryStats = reset_peak
    cuda.synchronize = lambda device=None: None
    cuda.get_device_properties = lambda device=None: SimpleNamespace(
        total_memory=cfg["total"], name="Fake GPU",
        uuid=cfg.get("uuid", "fa4e0000-0000-0000-0000-000000000000"))
    cuda.mem_get_info = lambda device=None: (cfg["free"], cfg["total"])

    def set_sync_debug_mode(mode: Any) -> None:
        state["sync_mode"] = 0 if mode in (0, "default") else mode

    cuda.set_sync_debug_mode = set_sync_debug_mode
    cuda.get_sync_debug_mode = lambda: state["sync_mode"]
    torch.Tensor.is_cuda = property(lambda self: True)  # type: ignore[assignment,method-assign]
    real_item = torch.Tensor.item

    def item(self: Any) -> Any:
        if state["sync_mode"] == "warn":
            warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=2)
        return real_item(self)

    torch.Tensor.item = item  # type: ignore[method-assign]
    return cfg
