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
            f = None
            before = None
            try:
                f = _target(args, kwargs)
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
                probe._record(t0, t1, what, f, before)

        save._gpubottle_save = True  # type: ignore[attr-defined]
        setattr(module, name, save)
        return None

    def _record(self, t0: float, t1: float, what: str, f: Any, before: int | None) -> None:
        try:
            main = threading.current_thread() is threading.main_thread()
            self.recorder.emit(Saved(t0, t1, caller_site(), what, _written(f, before), int(main),
                                     library_builder()))
        except Exception:
            pass  # a save that cannot be recorded is still the script's save
