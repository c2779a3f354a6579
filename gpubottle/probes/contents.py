"""What fills the GPU's memory: weights, gradients, optimizer state, and the rest.

The optimizers the script created (tracked weakly by the hooks) name the model's parameters, their
gradients and the optimizer's state; everything else the allocator holds is activations, autograd's
saved tensors, batches and caches. That split decides the fix: activations shrink with the batch and
checkpointing, model state only with sharding, lower precision or a leaner optimizer.

At an OOM (only then: it walks every object) tensors still referenced from Python are scanned too,
and the largest groups of them named by shape and count: a stray full-size tensor, or a list that
keeps one tensor per step, is a common culprit.
"""

from __future__ import annotations

import collections
import gc
import weakref
from collections.abc import Iterable
from typing import Any

TOP_TENSORS = 3


def _on_device(t: Any, device_type: str) -> bool:
    try:
        if device_type == "cuda":
            return bool(t.is_cuda)
        return bool(t.device.type == device_type)
    except Exception:
        return False


def storage_of(t: Any) -> tuple[int, int] | None:
    """(storage address, bytes): views of one storage count once."""
    try:
        st = t.untyped_storage()
        return int(st.data_ptr()), int(st.nbytes())
    except Exception:
        return None


def shape_label(t: Any, device: bool = False) -> str:
    """'(128, 256) float32', and the device type after it when asked."""
    try:
        label = f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"
        return f"{label} {t.device.type}" if device else label
    except Exception:
        return "tensor"


PROXIES = (weakref.ProxyType, weakref.CallableProxyType)


def heap_tensors_and_modules(deques: list[Any] | None = None) -> tuple[list[Any], list[Any]]:
    """Every tensor and nn.Module Python holds (one walk over the garbage collector's objects), and
    into `deques` where given, every collections.deque (the leak census's bounded buffers).

    Judged by type, each type once: isinstance() on each of a heap's ~300k objects cost 3x as much
    (120 ms against 40, a census's whole pause on a loop that keeps its outputs), went through lazy
    modules' warnings, and would look through a weakref proxy to a referent that may be gone
    (torch.compile keeps them: even isinstance raises ReferenceError there)."""
    import torch

    tensor, module = torch.Tensor, torch.nn.Module
    kinds: dict[type, int] = {} if deques is None else {collections.deque: 3}
    tensors: list[Any] = []
    modules: list[Any] = []
    for o in gc.get_objects():
        tp = type(o)
        kind = kinds.get(tp)
        if kind is None:
            try:
                kind = 1 if issubclass(tp, tensor) else 2 if issubclass(tp, module) else 0
            except Exception:  # a metaclass whose subclass check fails: not ours to count
                kind = 0
            kinds[tp] = kind
        if kind == 1:
            tensors.append(o)
        elif kind == 2:
            modules.append(o)
        elif kind == 3 and deques is not None:
            deques.append(o)
    return tensors, modules


class _Tally:
    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.seen: set[int] = set()
        self.bytes: dict[str, int] = {"weights": 0, "gradients": 0, "optimizer_state": 0,
                                      "other_python": 0}
        self.groups: dict[str, list[int]] = {}  # shape and dtype -> [bytes, count]

    def add(self, t: Any, kind: str) -> None:
        if t is None or not _on_device(t, self.device_type):
            return
        s = storage_of(t)
        if s is None or s[0] in self.seen or s[1] == 0:
            return
        self.seen.add(s[0])
        self.bytes[kind] += s[1]
        if kind == "other_python":
            g = self.groups.setdefault(shape_label(t), [0, 0])
            g[0] += s[1]
            g[1] += 1


def _state_tensors(state: Any) -> Iterable[Any]:
    import torch

    for per_param in list(state.values()):
        values = per_param.values() if isinstance(per_param, dict) else [per_param]
        for v in values:
            if isinstance(v, torch.Tensor):
                yield v


def memory_contents(optimizers: Iterable[Any], device_type: str = "cuda",
           scan_objects: bool = False) -> dict[str, Any]:
    """Bytes by kind on `device_type`; with scan_objects, also tensors anywhere in Python's heap."""
    import torch

    tally = _Tally(device_type)
    opt_names: list[str] = []
    params: list[Any] = []
    states: list[Any] = []
    for opt in list(optimizers):
        try:
            opt_names.append(type(opt).__name__)
            for group in opt.param_groups:
                params.extend(group["params"])
            states.append(opt.state)
        except Exception:
            continue
    for p in params:
        tally.add(p, "weights")
    for p in params:
        tally.add(getattr(p, "grad", None), "gradients")
    for st in states:
        try:
            for t in _state_tensors(st):
                tally.add(t, "optimizer_state")
        except Exception:
            continue
    if scan_objects:
        try:
            tensors, modules = heap_tensors_and_modules()
            # Parameters of a model without an optimizer (inference) still count as weights.
            for m in modules:
                for p in m.parameters(recurse=False):
                    tally.add(p, "weights")
                    tally.add(p.grad, "gradients")
            for t in tensors:
                tally.add(t, "weights" if isinstance(t, torch.nn.Parameter) else "other_python")
        except Exception:
            pass
    # Grouped by shape: a list that keeps one tensor per step shows as many of the same shape.
    top = sorted(tally.groups.items(), key=lambda kv: -kv[1][0])[:TOP_TENSORS]
    return {
        **tally.bytes,
        "optimizers": sorted(set(opt_names)),
        "top_tensors": [[label, n, count] for label, (n, count) in top],
        "scanned": scan_objects,
    }
