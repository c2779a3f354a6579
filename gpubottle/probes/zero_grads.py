"""Where the script zeroes its gradients against its backward passes and optimizer steps, over a
few steps: a loop that accumulates gradients over micro-batches (a step every N backward passes)
but calls zero_grad() before every backward, not once a step, throws away all but the last
micro-batch's gradients: the step trains on one micro-batch and the other backward passes were for
nothing. Nothing in the step's time shows it.

From step WINDOW_FROM's end for WINDOW_STEPS steps, torch.optim.Optimizer.zero_grad and
nn.Module.zero_grad are wrapped (the originals put back after: no cost outside the window), and
each call's time and the user's line are recorded; the window's record (ZeroGrads) goes at its
end. The backward passes and optimizer steps inside it are the hooks' own records
(analysis/zero_grads.py reads them together). Not where torch.compile has compiled anything: a
compiled step that calls zero_grad would see the method change, twice. Fails open: nothing
recorded where wrapping fails.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

from gpubottle.options import ChildConfig
from gpubottle.probes.hooks import NEVER, Wake
from gpubottle.probes.modes import _compiled
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import caller_site
from gpubottle.wire import ZeroGrads

WINDOW_FROM = 4  # the window opens at this step's end (after model_calls' counted step)
WINDOW_STEPS = 3
MAX_CALLS = 64


class ZeroGradWindow:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.patched: list[tuple[Any, Any]] = []  # (class, original zero_grad)
        self.calls: list[list[Any]] = []  # [t, site]
        self.t0 = 0.0
        self.until = 0
        self.done = False

    def reset(self, cfg: ChildConfig) -> None:
        self._restore()
        self.done = False

    def on_step(self, step: int) -> Wake | None:
        if self.patched:
            if step < self.until:
                return (self.until, math.inf)
            self._close()
        elif step == WINDOW_FROM and not self.done and self.recorder.active:
            self._open(step)
            if self.patched:
                return (self.until, math.inf)
        return NEVER if self.done or step > WINDOW_FROM else (WINDOW_FROM, math.inf)

    def finish(self, exc: BaseException | None) -> None:
        if self.patched:
            self._close()

    def _open(self, step: int) -> None:
        self.done = True
        if _compiled(None):
            return
        try:
            import torch

            self.calls, self.t0, self.until = [], time.monotonic(), step + WINDOW_STEPS
            for cls in (torch.optim.Optimizer, torch.nn.Module):
                orig = cls.__dict__["zero_grad"]
                cls.zero_grad = self._wrap(orig)  # type: ignore[method-assign]
                self.patched.append((cls, orig))
        except Exception:
            self._restore()

    def _wrap(self, orig: Any) -> Any:
        calls = self.calls

        @functools.wraps(orig)
        def zero_grad(*args: Any, **kwargs: Any) -> Any:
            if len(calls) < MAX_CALLS:
                try:
                    calls.append([time.monotonic(), caller_site()])
                except Exception:
                    pass
            return orig(*args, **kwargs)

        return zero_grad

    def _restore(self) -> None:
        patched, self.patched = self.patched, []
        for cls, orig in patched:
            try:
                cls.zero_grad = orig
            except Exception:
                pass

    def _close(self) -> None:
        self._restore()
        try:
            self.recorder.emit(ZeroGrads(self.t0, time.monotonic(), self.calls))
        except Exception:
            pass
