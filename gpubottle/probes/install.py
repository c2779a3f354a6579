"""Install the torch probes the moment the script imports torch, never before.

Importing torch ahead of the script would change what it does: environment variables it sets before
`import torch` (CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS) would come too late.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.recorder import Recorder, Stopper
from gpubottle.wire import Probes


class _TorchWatcher(importlib.abc.MetaPathFinder):
    def __init__(self, on_loaded: Any) -> None:
        self._on_loaded = on_loaded
        self._busy = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch" or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module
        on_loaded = self._on_loaded

        def exec_module(module: ModuleType) -> None:
            orig_exec(module)
            on_loaded()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install_when_torch_imported(recorder: Recorder, stopper: Stopper, hooks: StepHooks | None = None,
                                trial: dict[str, Any] | None = None,
                                also: Mapping[str, Callable[[Any], str | None]] | None = None
                                ) -> None:
    """`also`: more patches the launcher makes once torch is in (name -> patch(torch) returning None
    when done, else why not): how the launch stage adds its own without the probes importing it."""
    status: dict[str, Any] = {}

    def on_loaded() -> None:
        try:
            from gpubottle.probes import torch_hooks

            torch_hooks.install(recorder, stopper, status, hooks, trial)
        except Exception as exc:
            status["torch"] = f"probe install failed: {exc!r}"[:300]
        for name, patch in (also or {}).items():
            try:
                status[name] = patch(sys.modules["torch"])
            except Exception as exc:
                status[name] = f"not installed: {exc!r}"[:300]
        recorder.emit(Probes(status))
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchWatcher)]

    if "torch" in sys.modules:
        on_loaded()
    else:
        sys.meta_path.insert(0, _TorchWatcher(on_loaded))
