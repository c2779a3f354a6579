"""Machine facts that decide what 'unused capacity' means: the cores and memory the run may use."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass


@dataclass
class CoreBudget:
    logical: int | None
    affinity: int | None
    cgroup_quota: float | None
    shared_by: int = 1  # ranks of one job on this machine: each counts on its part

    @property
    def available(self) -> float | None:
        values = [float(v) for v in (self.logical, self.affinity, self.cgroup_quota) if v]
        return min(values) / max(1, self.shared_by) if values else None

    def shared(self, ranks: int) -> CoreBudget:
        return dataclasses.replace(self, shared_by=max(1, ranks))


_BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}  # x86 (AVX-512 BF16, AMX), Arm ("bf16" feature)


def cpu_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool | None:
    """Whether the CPU computes bfloat16 natively (then CPU autocast to bf16 can be much faster;
    without it, emulated, usually slower). None where the platform does not say (no /proc)."""
    text = _read(cpuinfo)
    if text is None:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return bool(_BF16_FLAGS & set(value.split()))
    return None


# x86's float16 arithmetic (Sapphire Rapids' AVX-512 FP16, Granite Rapids' AMX-FP16): without
# them torch's CPU float16 matmuls run a slow fallback (measured on an AMD EPYC with AVX-512 BF16:
# a 128x2048 @ 2048x2048 matmul 2.6 s in float16, 7 ms in float32, 2.7 ms in bfloat16).
_FP16_FLAGS = {"avx512_fp16", "amx_fp16"}


def cpu_fp16(cpuinfo: str = "/proc/cpuinfo") -> bool | None:
    """Whether the CPU computes float16 natively (x86: AVX-512 FP16 or AMX-FP16). None where the
    platform does not say, and on Arm, whose half-precision instructions torch may or may not use."""
    text = _read(cpuinfo)
    if text is None:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return bool(_FP16_FLAGS & set(value.split()))
        if key.strip() == "Features":
            return None
    return None


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """CPU quota in cores from cgroup v2 `cpu.max` or v1 `cpu.cfs_quota_us`; None when unlimited."""
    v2 = _read(os.path.join(root, "cpu.max"))
    if v2:
        parts = v2.split()
        if len(parts) == 2 and parts[0] != "max":
            try:
                return int(parts[0]) / int(parts[1])
            except (ValueError, ZeroDivisionError):
                return None
        return None
    quota = _read(os.path.join(root, "cpu", "cpu.cfs_quota_us")) or _read(
        os.path.join(root, "cpu,cpuacct", "cpu.cfs_quota_us")
    )
    period = _read(os.path.join(root, "cpu", "cpu.cfs_period_us")) or _read(
        os.path.join(root, "cpu,cpuacct", "cpu.cfs_period_us")
    )
    try:
        if quota and period and int(quota) > 0:
            return int(quota) / int(period)
    except ValueError:
        pass
    return None


def cgroup_memory_limit(root: str = "/sys/fs/cgroup") -> int | None:
    """Memory limit in bytes (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`); None if unlimited."""
    for path in (os.path.join(root, "memory.max"), os.path.join(root, "memory", "memory.limit_in_bytes")):
        raw = _read(path)
        if raw is None or raw == "max":
            continue
        try:
            value = int(raw)
        except ValueError:
            continue
        if value < (1 << 60):  # v1 writes a huge number for 'unlimited'
            return value
    return None


def cgroup_memory_current(root: str = "/sys/fs/cgroup") -> int | None:
    for path in (os.path.join(root, "memory.current"), os.path.join(root, "memory", "memory.usage_in_bytes")):
        raw = _read(path)
        if raw:
            try:
                return int(raw)
            except ValueError:
                continue
    return None


def core_budget(pid: int | None = None) -> CoreBudget:
    logical = os.cpu_count()
    try:
        affinity: int | None = len(os.sched_getaffinity(pid or 0))
    except (AttributeError, OSError):
        affinity = None
    return CoreBudget(logical=logical, affinity=affinity, cgroup_quota=cgroup_cpu_quota())
