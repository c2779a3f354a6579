"""Activation checkpointing (torch.utils.checkpoint.checkpoint): each block it wraps keeps no
activations from its forward and runs that forward again in backward, memory traded for time. A
recipe's setting (`gradient_checkpointing=True`, a `use_checkpoint` flag) often stays on where the
memory is there: the step then pays for the forwards twice (a 6-block MLP here: 42.3 ms a step with
it, 33.4 ms without; its checkpointed forwards 8.9 ms).

torch.utils.checkpoint.checkpoint is wrapped as torch is imported, before the script's own
`from torch.utils.checkpoint import checkpoint` binds it (transformers binds it when imported). The
wrapper only notes that it ran until step WINDOW_FROM; if it did, the next WINDOW_STEPS steps time
each outermost call made with autograd on outside backward (its forward: what backward runs again;
a checkpoint() inside a checkpointed block is the outer call's, in its forward or its recompute)
against the step's own time, and one record
(Checkpointed) goes at the window's end. Under torch.compile the original is called as it is (its
tracer knows checkpoint by identity). Fails open: an error leaves the original in place or records
nothing.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import time
from collections import Counter
from typing import Any

from gpubottle.options import ChildConfig
from gpubottle.probes.hooks import NEVER, Wake
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import caller_site, library_builder
from gpubottle.wire import Checkpointed

# After the warm-up steps the statistics leave out, model_calls' counted step (4) and the zero_grad
# window (5-7): their hooks would time into the blocks' forwards.
WINDOW_FROM = 10
WINDOW_STEPS = 20
MAX_NAMES = 3


SEQUENTIAL = "checkpoint_sequential"  # its segments, named as the call the user wrote


def block_name(function: Any) -> str:
    """What a checkpoint() call wraps, as the user wrote it: a module's class (`Block`), a bound
    method's owner (`layer.__call__` -> its class), a partial's function, the module a closure
    calls (`create_custom_forward(layer)`'s custom_forward -> the layer's class), else the
    function's own name."""
    if isinstance(function, functools.partial):
        function = function.func
    owner = getattr(function, "__self__", None)
    if owner is not None and not isinstance(owner, type):
        return type(owner).__name__
    import torch

    for cell in getattr(function, "__closure__", None) or ():
        try:
            if isinstance(cell.cell_contents, torch.nn.Module):
                return type(cell.cell_contents).__name__
        except ValueError:  # (an empty cell)
            continue
    name = getattr(function, "__qualname__", None)
    return str(name).rsplit(".", 1)[-1] if name else type(function).__name__


class CheckpointProbe:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.seen = False  # checkpoint() ran before the window
        self.timing = False
        self.done = False
        self._depth = 0  # nested calls (checkpoint inside a checkpointed block) are the outer's
        self._t = 0.0  # the window's current step began
        self._in_step = 0.0  # checkpointed forwards' seconds in the current step
        self._calls = 0
        self.steps: list[list[float]] = []  # [step seconds, checkpointed seconds, calls]
        self.sites: Counter[tuple[str | None, str | None]] = Counter()  # (user's line, library)
        self.names: Counter[str] = Counter()
        self._where: dict[tuple[Any, int, Any, int], tuple[str | None, str | None]] = {}

    def reset(self, cfg: ChildConfig) -> None:
        self.timing = self.done = self.seen = False
        self.steps.clear()
        self.sites.clear()
        self.names.clear()

    def patch_torch(self, torch: Any, status: dict[str, Any]) -> None:
        import torch.utils.checkpoint as cp

        orig = cp.checkpoint
        if getattr(orig, "_gpubottle_checkpoint", False):
            return
        compiling = torch.compiler.is_compiling
        grad_enabled = torch.is_grad_enabled
        # Inside backward (a checkpointed block's recompute calling checkpoint() itself): not a
        # forward of the step's. -1 outside any backward.
        task = getattr(torch._C, "_current_graph_task_id", lambda: -1)
        main = threading.main_thread()
        probe = self

        @functools.wraps(orig)
        def checkpoint(function: Any, *args: Any, **kwargs: Any) -> Any:
            if not probe.timing or probe._depth or compiling() or not grad_enabled() \
                    or task() != -1 or threading.current_thread() is not main:
                probe.seen = True
                return orig(function, *args, **kwargs)
            probe._depth = 1
            t0 = time.perf_counter()
            try:
                return orig(function, *args, **kwargs)
            finally:
                probe._depth = 0
                probe._note(function, time.perf_counter() - t0)

        checkpoint._gpubottle_checkpoint = True  # type: ignore[attr-defined]
        cp.checkpoint = checkpoint
        status["checkpoint"] = None

    def _note(self, function: Any, seconds: float) -> None:
        try:
            self._in_step += seconds
            self._calls += 1
            caller = sys._getframe(2)  # checkpoint() -> its caller
            up = caller.f_back  # (checkpoint_sequential's frame is one for all its callers: theirs too)
            key = (caller.f_code, caller.f_lineno, up.f_code if up else None, up.f_lineno if up else 0)
            where = self._where.get(key)
            if where is None:
                where = self._where[key] = (caller_site(caller), library_builder(caller))
            self.sites[where] += 1
            if len(self.names) < 16:
                seq = caller.f_code.co_name == SEQUENTIAL  # (its segments' closures: its own name)
                self.names[SEQUENTIAL if seq else block_name(function)] += 1
        except Exception:
            pass

    def on_step(self, step: int) -> Wake | None:
        now = time.perf_counter()
        if self.timing:
            self.steps.append([now - self._t, self._in_step, float(self._calls)])
            self._t, self._in_step, self._calls = now, 0.0, 0
            if len(self.steps) < WINDOW_STEPS:
                return (step + 1, math.inf)
            self._close()
            return NEVER
        if self.done or step > WINDOW_FROM:
            return NEVER
        if step < WINDOW_FROM:
            return (WINDOW_FROM, math.inf)
        if not self.seen or not self.recorder.active:
            self.done = True
            return NEVER
        self.timing = True
        self._t, self._in_step, self._calls = now, 0.0, 0
        return (step + 1, math.inf)

    def finish(self, exc: BaseException | None) -> None:
        if self.timing:
            self._close()

    def _close(self) -> None:
        self.timing = False
        self.done = True
        try:
            if not self.steps or not any(s[1] for s in self.steps):
                return
            (site, via), _ = self.sites.most_common(1)[0]
            self.recorder.emit(Checkpointed(
                [[round(a, 6), round(b, 6), int(c)] for a, b, c in self.steps], site, via,
                [n for n, _ in self.names.most_common(MAX_NAMES)]))
        except Exception:
            pass
