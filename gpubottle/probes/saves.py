"""Checkpoints: every call of a save function (torch.save, safetensors, torch.distributed.checkpoint)
timed, with the user's line that called it, what it wrote and on which thread.

A save on the loop's own thread stops training while it writes; one on another thread (an
asynchronous checkpoint) does not, and the analysis counts only the first against the run. Nested
saves (a library whose save calls torch.save) are one save, the outermost.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import caller_site, library_builder
from gpubottle.wire import Saved

# Libraries whose save functions are wrapped when (and only when) the script imports them.
LIBRARY_SAVES: dict[str, tuple[str, ...]] = {
    "safetensors.torch": ("save_file", "save_model"),
    "torch.distributed.checkpoint": ("save", "async_save", "save_state_dict"),
}


def _target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The file a save writes to: torch.save(obj, f), save_file(tensors, filename),
    dcp.save(state, checkpoint_id=...)."""
    for key in ("f", "filename", "checkpoint_id"):
        if key in kwargs:
            return kwargs[key]
    return args[1] if len(args) > 1 else None


def _saved_object(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What a save writes: torch.save(obj, f), save_file(tensors, ...), dcp.save(state_dict, ...)."""
    if args:
        return args[0]
    return next((kwargs[k] for k in ("obj", "tensors", "state_dict", "model") if k in kwargs), None)


MAX_TENSORS = 20000  # a walk over the saved object stops here (a save of many small tensors)


def _storages(obj: Any, out: dict[int, int], depth: int = 0) -> None:
    """The tensors' storages in a saved object (dicts, lists, tuples, a whole module), by address:
    their bytes. Other objects are not entered (pickled as they are, counted by the file's size)."""
    import torch

    if len(out) >= MAX_TENSORS or depth > 8:
        return
    if isinstance(obj, torch.Tensor):
        st = obj.untyped_storage()
        out[st.data_ptr()] = st.nbytes()
    elif isinstance(obj, dict):
        for v in obj.values():
            _storages(v, out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _storages(v, out, depth + 1)
    elif isinstance(obj, torch.nn.Module):
        for t in (*obj.parameters(), *obj.buffers()):
            _storages(t, out, depth + 1)


def training_state(hooks: Any) -> set[int]:
    """The storages of what resuming needs: the optimizers' parameters and state, and the
    parameters and buffers of the modules the loop calls (probes/hooks.StepHooks)."""
    import torch

    ptrs: set[int] = set()
    for opt in list(getattr(hooks, "optimizers", ())):
        for group in opt.param_groups:
            for p in group["params"]:
                ptrs.add(p.untyped_storage().data_ptr())
        for per_param in opt.state.values():
            for v in per_param.values() if isinstance(per_param, dict) else ():
                if isinstance(v, torch.Tensor):
                    ptrs.add(v.untyped_storage().data_ptr())
    for m in list(getattr(hooks, "models", ())):
        for t in (*m.parameters(), *m.buffers()):
            ptrs.add(t.untyped_storage().data_ptr())
    return ptrs


def state_bytes(obj: Any, hooks: Any) -> int | None:
    """Of a saved object, the bytes of its tensors that are the training's state; None where the
    probes know no optimizer or model to tell it by, or on any error."""
    try:
        if hooks is None or not (len(hooks.optimizers) or len(hooks.models)):
            return None
        found: dict[int, int] = {}
        _storages(obj, found)
        state = training_state(hooks)
        return sum(n for ptr, n in found.items() if ptr in state)
    except Exception:
        return None


def _position(f: Any) -> int | None:
    try:
        return int(f.tell()) if hasattr(f, "tell") else None
    except Exception:
        return None


def _written(f: Any, before: int | None) -> int | None:
    """Bytes the save wrote: the file's size for a path, what a file object advanced by."""
    try:
        if isinstance(f, (str, os.PathLike)):
            path = os.fspath(f)
            if os.path.isdir(path):  # a distributed checkpoint's folder
                return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
            return os.path.getsize(path)
        after = _position(f)
        return after - before if after is not None and before is not None else None
    except Exception:
        return None


class SaveProbe:
    def __init__(self, recorder: Recorder, hooks: Any = None) -> None:
        self.recorder = recorder
        self.hooks = hooks  # probes/hooks.StepHooks: the device clock marks where a save begins
        self._local = threading.local()  # the depth of saves on this thread (nested: one save)

    def wrap(self, module: Any, name: str, what: str) -> str | None:
        """Wrap module.name; None when done, else why not."""
        orig = getattr(module, name, None)
        if orig is None:
            return f"{what} not found"
        if getattr(orig, "_gpubottle_save", False):
            return None
        probe = self

        @functools.wraps(orig)
        def save(*args: Any, **kwargs: Any) -> Any:
            local = probe._local
            if getattr(local, "depth", 0) or not probe.recorder.active:
                return orig(*args, **kwargs)
            local.depth = 1
            f = obj = None
            before = None
            try:
                f = _target(args, kwargs)
                obj = _saved_object(args, kwargs)
                before = _position(f)
            except Exception:
                pass
            if probe.hooks is not None:
                probe.hooks.phase()  # the device's backlog as the save begins (probes/device_clock.py)
            t0 = time.monotonic()
            try:
                return orig(*args, **kwargs)
            finally:
                t1 = time.monotonic()
                local.depth = 0
                probe._record(t0, t1, what, f, before, obj)

        save._gpubottle_save = True  # type: ignore[attr-defined]
        setattr(module, name, save)
        return None

    def _record(self, t0: float, t1: float, what: str, f: Any, before: int | None, obj: Any) -> None:
        try:
            main = threading.current_thread() is threading.main_thread()
            began = time.perf_counter()
            state = state_bytes(obj, self.hooks)  # ~9 ms for 8000 tensors (a save took 263 ms)
            if self.hooks is not None:  # the probes' own time in the script's thread, accounted
                self.hooks.spent_s += time.perf_counter() - began
            self.recorder.emit(Saved(t0, t1, caller_site(), what, _written(f, before), int(main),
                                     library_builder(), state))
        except Exception:
            pass  # a save that cannot be recorded is still the script's save
