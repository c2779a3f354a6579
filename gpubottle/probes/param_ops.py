"""Ops the training step runs on the model's parameters themselves, outside any module's forward,
with autograd on: a penalty written over the parameters tensor by tensor, `l2 = sum(p.pow(2).sum()
for p in model.parameters())`, whose forward and backward are a few small ops per tensor each step
(a 7-layer MLP with Adam, 30 tensors: 7.0 ms a step with it, 5.9 ms with weight_decay doing the same
inside the optimizer's multi-tensor update).

For model_calls.py's counted step only, a TorchFunctionMode sees every torch function the script
calls; one made outside every module's forward (its forward hooks keep that depth), with autograd
on, outside backward and not by gpubottle is counted at the user's line, with its time, and as a
parameter op where an argument is a tensor the script's optimizer holds. The mode is the thread's
own (DataLoader threads never see it), and leaves the stack only from its top (a mode the script
pushed meanwhile stays, this one passing everything through).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any

from gpubottle.probes.sites import OWN_DIR, caller_site

MIN_PARAM_OPS = 4  # a line with fewer ops on parameters is not a walk over them
MAX_SITES = 3
# Attribute access on a tensor (p.grad read or set by zero_grad), not an op on its values.
_ACCESS = frozenset({"__get__", "__set__", "__delete__"})


def _mode_class() -> Any:
    from torch.overrides import TorchFunctionMode

    class ParamOps(TorchFunctionMode):
        def __init__(self, params: set[int], depth: Any) -> None:
            super().__init__()
            import torch

            self.params = params
            self.depth = depth  # () -> how deep in module forwards the thread is
            self.grad_enabled = torch.is_grad_enabled
            self.task = getattr(torch._C, "_current_graph_task_id", lambda: -1)
            self.on = True
            # the user's line -> [ops, ops on parameters, seconds]; the functions on parameters
            self.sites: dict[str | None, list[float]] = {}
            self.names: dict[str | None, Counter[str]] = {}
            self._where: dict[tuple[Any, int], str | None] = {}

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if not self.on or getattr(func, "__name__", "") in _ACCESS or self.depth() \
                    or not self.grad_enabled() or self.task() != -1:
                return func(*args, **kwargs)
            caller = sys._getframe(1)
            if caller.f_code.co_filename.startswith(OWN_DIR):
                return func(*args, **kwargs)
            t0 = time.perf_counter()
            out = func(*args, **kwargs)
            spent = time.perf_counter() - t0
            try:
                self._note(func, args, caller, spent)
            except Exception:
                self.on = False
            return out

        def _note(self, func: Any, args: Any, caller: Any, spent: float) -> None:
            key = (caller.f_code, caller.f_lineno)
            if key not in self._where:
                self._where[key] = caller_site(caller)
            site = self._where[key]
            row = self.sites.setdefault(site, [0, 0, 0.0])
            row[0] += 1
            row[2] += spent
            if any(id(a) in self.params for a in args):
                row[1] += 1
                self.names.setdefault(site, Counter())[getattr(func, "__name__", "?")] += 1

    return ParamOps


def start(optimizers: Any, depth: Any) -> Any | None:
    """The mode, entered, over the parameters of the script's optimizers; None without any."""
    params = {id(p) for o in list(optimizers or ()) for g in o.param_groups for p in g["params"]}
    if not params:
        return None
    mode = _mode_class()(params, depth)
    mode.__enter__()
    return mode


def stop(mode: Any) -> list[list[Any]] | None:
    """Leave the mode (from the stack's top only), and its lines with MIN_PARAM_OPS parameter ops
    or more: [the user's line, ops, ops on parameters, seconds, the functions on parameters]."""
    from torch.overrides import _get_current_function_mode

    mode.on = False
    if _get_current_function_mode() is mode:  # type: ignore[no-untyped-call]
        mode.__exit__(None, None, None)
    rows = [[site, int(r[0]), int(r[1]), round(r[2], 6),
             [n for n, _ in mode.names.get(site, Counter()).most_common(3)]]
            for site, r in mode.sites.items() if r[1] >= MIN_PARAM_OPS]
    rows.sort(key=lambda r: -r[2])
    return rows[:MAX_SITES] or None
