"""Which GPUs NVML can show us, and which of them CUDA_VISIBLE_DEVICES lets the script use.

Each device is fetched on its own: a device the process may not open (cgroup-restricted GPUs under
Slurm, containers) is skipped with the reason and the rest are sampled. Devices are named by UUID,
the one identity NVML and CUDA share: NVML indices follow the PCI bus while CUDA's default order is
fastest first, and a MIG instance exists for CUDA only as `MIG-<uuid>`. Which devices the run really
used is decided later, from the UUIDs the script's own torch reports (see analysis/nvml.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpubottle.units import device_label

MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE


@dataclass
class Device:
    key: int  # position in the sampled list: the key of this device in every sample
    index: int  # NVML index of the physical GPU
    uuid: str
    handle: Any
    name: str | None = None
    mig: int | None = None  # MIG device index inside the physical GPU
    gi: int | None = None  # GPU instance id (MIG)
    ci: int | None = None  # compute instance id (MIG)
    parent_uuid: str | None = None  # the physical GPU of a MIG instance
    metrics: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return device_label(self.index, self.mig)

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "index": self.index, "mig": self.mig, "uuid": self.uuid,
                "name": self.name, "metrics": self.metrics}


def uuid_key(uuid: str) -> str:
    """The UUID's hex digits: NVML writes `GPU-`/`MIG-` before them, torch writes them bare."""
    u = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if u.startswith(prefix):
            u = u[len(prefix):]
    return u.replace("-", "")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)  # bytes before pynvml 11.515


def short_error(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__)[:120]


def enumerate_devices(n: Any) -> tuple[list[Device], list[str]]:
    """Every device NVML lets us open (MIG instances of MIG-enabled GPUs included), and one line
    for each that could not be opened. nvmlDeviceGetCount failing is the caller's to handle."""
    devices: list[Device] = []
    skipped: list[str] = []
    for i in range(int(n.nvmlDeviceGetCount())):
        try:
            h = n.nvmlDeviceGetHandleByIndex(i)
            uuid = _text(n.nvmlDeviceGetUUID(h))
        except Exception as exc:
            skipped.append(f"GPU {i}: {short_error(exc)}")
            continue
        parent = Device(len(devices), i, uuid, h, name=_name(n, h))
        devices.append(parent)
        if _mig_enabled(n, h):
            _mig_instances(n, parent, devices, skipped)
    return devices, skipped


def _mig_instances(n: Any, parent: Device, devices: list[Device], skipped: list[str]) -> None:
    i = parent.index
    try:
        slots = int(n.nvmlDeviceGetMaxMigDeviceCount(parent.handle))
    except Exception as exc:
        skipped.append(f"GPU {i} MIG instances: {short_error(exc)}")
        return
    for j in range(slots):
        try:
            mh = n.nvmlDeviceGetMigDeviceHandleByIndex(parent.handle, j)
            mig_uuid = _text(n.nvmlDeviceGetUUID(mh))
        except Exception as exc:
            if "not found" not in str(exc).lower():  # an empty slot is Not Found
                skipped.append(f"GPU {i} MIG {j}: {short_error(exc)}")
            continue
        devices.append(Device(len(devices), i, mig_uuid, mh, name=parent.name, mig=j,
                              gi=_optional_int(n, "nvmlDeviceGetGpuInstanceId", mh),
                              ci=_optional_int(n, "nvmlDeviceGetComputeInstanceId", mh),
                              parent_uuid=parent.uuid))


def _name(n: Any, h: Any) -> str | None:
    try:
        return _text(n.nvmlDeviceGetName(h))
    except Exception:
        return None


def _mig_enabled(n: Any, h: Any) -> bool:
    try:
        return int(n.nvmlDeviceGetMigMode(h)[0]) == MIG_ENABLED
    except Exception:  # not a MIG-capable GPU (Not Supported), or an old pynvml
        return False


def _optional_int(n: Any, fn: str, h: Any) -> int | None:
    try:
        return int(getattr(n, fn)(h))
    except Exception:
        return None


def visible(devices: list[Device], env: Mapping[str, str]) -> tuple[list[Device], str | None]:
    """The devices CUDA_VISIBLE_DEVICES names, in its order, and a note when that cannot be told
    from NVML alone (then all devices are kept: the script's UUIDs decide which it used)."""
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return list(devices), None
    physical = [d for d in devices if d.mig is None]
    same_kind = len({d.name for d in physical}) <= 1
    ordered = env.get("CUDA_DEVICE_ORDER", "").upper() == "PCI_BUS_ID" or same_kind
    out: list[Device] = []
    for item in (x.strip() for x in raw.split(",")):
        if not item:
            break
        if item.lstrip("-").isdigit():
            idx = int(item)
            if idx < 0 or idx >= len(physical):
                break  # CUDA stops at the first invalid entry
            if not ordered:
                return list(devices), ("CUDA_VISIBLE_DEVICES uses indices and CUDA_DEVICE_ORDER is "
                                       "not PCI_BUS_ID on mixed GPUs: all GPUs sampled")
            found = [physical[idx]]
        else:
            found = _by_uuid(devices, item)
        if len(found) != 1:
            break  # no match, or a prefix that names two devices: CUDA stops here too
        dev = found[0]
        out.append(dev)
        if dev.mig is None:  # a MIG-enabled GPU named whole: its instances are where work runs
            out += [d for d in devices if d.parent_uuid == dev.uuid and d not in out]
    return out, None


def _by_uuid(devices: list[Device], item: str) -> list[Device]:
    low = item.lower()
    if low.startswith("mig-gpu-"):  # the pre-R470 form: MIG-GPU-<parent uuid>/<gi>/<ci>
        parts = item[4:].split("/")
        if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
            return []
        parent, gi, ci = uuid_key(parts[0]), int(parts[1]), int(parts[2])
        return [d for d in devices if d.mig is not None and uuid_key(d.parent_uuid or "") == parent
                and d.gi == gi and d.ci == ci]
    want_mig = low.startswith("mig-")
    key = uuid_key(item)
    if not key:
        return []
    return [d for d in devices if (d.mig is not None) == want_mig and uuid_key(d.uuid).startswith(key)]
