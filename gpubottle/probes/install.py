"""Install the torch probes the moment the script imports torch, never before.

Importing torch ahead of the script would change what it does: environment variables it sets before
`import torch` (CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS) would come too late. The same watcher wraps
the save functions of checkpoint libraries (safetensors, torch.distributed.checkpoint) when, and
only if, the script imports them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.recorder import Recorder, Stopper
from gpubottle.probes.saves import LIBRARY_SAVES, SaveProbe
from gpubottle.wire import Probes

OnLoaded = Callable[[ModuleType, float], None]  # the module, and when its import began


class _ModuleWatcher(importlib.abc.MetaPathFinder):
    """Calls back once a watched module has been imported (and removes itself when none is left)."""

    def __init__(self, wanted: dict[str, OnLoaded]) -> None:
        self.wanted = wanted
        self._busy = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.wanted or self._busy:
            return None
        t0 = time.monotonic()
        self._busy = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module
        on_loaded = self.wanted.pop(fullname)
        if not self.wanted:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]

        def exec_module(module: ModuleType) -> None:
            orig_exec(module)
            on_loaded(module, t0)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def watch_imports(wanted: dict[str, OnLoaded]) -> None:
    """Run each callback now if its module is already imported, else once the script imports it."""
    pending = {}
    for name, callback in wanted.items():
        module = sys.modules.get(name)
        if module is not None:
            callback(module, time.monotonic())
        else:
            pending[name] = callback
    if pending:
        sys.meta_path.insert(0, _ModuleWatcher(pending))


def install_when_torch_imported(recorder: Recorder, stopper: Stopper, hooks: StepHooks | None = None,
                                trial: dict[str, Any] | None = None,
                                also: Mapping[str, Callable[[Any], str | None]] | None = None
                                ) -> None:
    """`also`: more patches the launcher makes once torch is in (name -> patch(torch) returning None
    when done, else why not): how the launch stage adds its own without the probes importing it."""
    status: dict[str, Any] = {}
    saves = SaveProbe(recorder, hooks)

    def on_torch(torch: ModuleType, t0: float) -> None:
        began = time.monotonic()
        try:
            from gpubottle.probes import torch_hooks

            torch_hooks.install(recorder, stopper, status, hooks, trial, imported=(t0, time.monotonic()))
        except Exception as exc:
            status["torch"] = f"probe install failed: {exc!r}"[:300]
        status["saves"] = saves.wrap(torch, "save", "torch.save")
        for name, patch in (also or {}).items():
            try:
                status[name] = patch(torch)
            except Exception as exc:
                status[name] = f"not installed: {exc!r}"[:300]
        recorder.emit_sticky("probes", Probes(status))
        recorder.installed = (began, time.monotonic())  # gpubottle's own time, in the account

    def library(functions: tuple[str, ...]) -> OnLoaded:
        def on_loaded(module: ModuleType, t0: float) -> None:
            for fn in functions:
                why = saves.wrap(module, fn, f"{module.__name__}.{fn}")
                if why is not None and hasattr(module, fn):
                    recorder.emit(Probes({f"saves-{module.__name__}.{fn}": why}))

        return on_loaded

    watch_imports({"torch": on_torch, **{mod: library(fns) for mod, fns in LIBRARY_SAVES.items()}})
