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

import os
import sys
import time
from collections import Counter
from typing import Any

from gpubottle.probes.optimizer_info import held_params
from gpubottle.probes.sites import OWN_DIR, caller_site, is_user_file, place

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
            self.torch_dir = os.path.dirname(torch.__file__) + os.sep
            self.on = True
            # the user's line -> [ops, ops on parameters, seconds]; the functions on parameters
            self.sites: dict[str | None, list[float]] = {}
            self.names: dict[str | None, Counter[str]] = {}
            self._where: dict[tuple[Any, int], tuple[str | None, str | None]] = {}
            self.called_at: dict[str | None, str | None] = {}

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if not self.on or getattr(func, "__name__", "") in _ACCESS or self.depth() \
                    or not self.grad_enabled() or self.task() != -1:
                return func(*args, **kwargs)
            # The first frame outside torch: an op torch writes in Python (Tensor.backward, `**`)
            # comes here from torch's own dispatch (overrides.py), shared by all of them.
            caller: Any = sys._getframe(1)
            while caller is not None and caller.f_code.co_filename.startswith(self.torch_dir):
                caller = caller.f_back
            if caller is None or caller.f_code.co_filename.startswith(OWN_DIR):
                return func(*args, **kwargs)
            # (torch takes this mode off its stack while it runs here: the ops an op written in
            # Python calls, `p ** 2` through Tensor.__pow__, are this one's)
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
                self._where[key] = (caller_site(caller), _called_at(caller))
            site, self.called_at[site] = self._where[key]
            row = self.sites.setdefault(site, [0, 0, 0.0])
            row[0] += 1
            row[2] += spent
            if self._on_params_alone(args):
                row[1] += 1
                self.names.setdefault(site, Counter())[getattr(func, "__name__", "?")] += 1

        def _on_params_alone(self, args: Any) -> bool:
            """An op on parameters and nothing else of the step's (`p.pow(2)`, `w * w`, a scalar
            beside): a penalty's. A parameter meeting a batch's tensor (`h @ W` in a forward written
            without modules) is the model's computation, not counted."""
            seen = False
            for a in args:
                if id(a) in self.params:
                    seen = True
                elif getattr(a, "ndim", 0):
                    return False
            return seen

    return ParamOps


def _called_at(frame: Any) -> str | None:
    """The user's line that called the function the op's user line is in (`l2 = penalty(model)`
    for a helper's `return sum(...)`): the next user frame up on another line (a generator
    expression's frame and its function's are on the same line), None where there is none."""
    first = None
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            at = place(frame.f_code.co_filename, frame.f_lineno)
            if first is not None and at != first:
                return at
            first = first or at
        frame = frame.f_back
    return None


def start(optimizers: Any, depth: Any) -> Any | None:
    """The mode, entered, over the parameters of the script's optimizers; None without any."""
    params = {id(p) for p in held_params(optimizers)}
    if not params:
        return None
    mode = _mode_class()(params, depth)
    mode.__enter__()
    return mode


def stop(mode: Any) -> list[list[Any]] | None:
    """Leave the mode (from the stack's top only), and its lines with MIN_PARAM_OPS parameter ops
    or more: [the user's line, ops, ops on parameters, seconds, the functions on parameters, the
    user's line that called its function]."""
    from torch.overrides import _get_current_function_mode

    mode.on = False
    if _get_current_function_mode() is mode:  # type: ignore[no-untyped-call]
        mode.__exit__(None, None, None)
    rows = [[site, int(r[0]), int(r[1]), round(r[2], 6),
             [n for n, _ in mode.names.get(site, Counter()).most_common(3)], mode.called_at.get(site)]
            for site, r in mode.sites.items() if r[1] >= MIN_PARAM_OPS]
    rows.sort(key=lambda r: -r[2])
    return rows[:MAX_SITES] or None
