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

A loop that never clears its gradients at all (no zero_grad(), no `p.grad = None`) adds each
backward to every one before it: told at the window's first backward, where a parameter's
gradient is still the tensor the previous step used, changed once since (the accumulation into
it; a zero_grad(set_to_none=False) would have changed it twice, set_to_none=True replaced it).
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
MAX_WATCHED = 4  # optimizers watched for whose gradients each backward filled


class ZeroGradWindow:
    def __init__(self, recorder: Recorder, optimizers: Any = None) -> None:
        self.recorder = recorder
        self.optimizers = optimizers  # the script's optimizers (StepHooks.optimizers)
        self.kept: list[Any] | None = None  # [1 or 0, the backward's line], once told
        self.watch: tuple[Any, Any, int] | None = None  # a parameter, its gradient, that one's version
        self.handle: Any = None
        self.patched: list[tuple[Any, Any]] = []  # (class, original zero_grad)
        self.calls: list[list[Any]] = []  # [t, site, the optimizer's id or None]
        # With several optimizers: [t, optimizer's id, the backward's line] at each accumulation
        # into one watched parameter of each (which backward filled whose gradients)
        self.grads: list[list[Any]] = []
        self.each: list[Any] = []  # those hooks' handles
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
                cls.zero_grad = self._wrap(orig, cls is torch.optim.Optimizer)  # type: ignore[method-assign]
                self.patched.append((cls, orig))
        except Exception:
            self._restore()
            return
        self._watch()
        self._watch_each()

    def _watch(self) -> None:
        """The first parameter of the script's one optimizer that has a gradient now (its last step
        used it): a hook on its next accumulation tells whether anything cleared it."""
        self.kept = None
        opts = list(self.optimizers or ())
        if len(opts) != 1:
            return
        try:
            p = next((p for g in opts[0].param_groups for p in g["params"]
                      if p.requires_grad and p.grad is not None), None)
            if p is not None:
                self.watch = (p, p.grad, p.grad._version)
                self.handle = p.register_post_accumulate_grad_hook(self._accumulated)
        except Exception:
            self._unwatch()

    def _watch_each(self) -> None:
        """With several optimizers (a GAN's two), a hook on one parameter of each: which backward
        filled its gradients (D's loss backpropagated through G where G's output went in
        undetached: G's optimizer clears them before its step)."""
        self.grads, self.each = [], []
        opts = list(self.optimizers or ())
        if len(opts) < 2:
            return
        try:
            for opt in opts[:MAX_WATCHED]:
                p = next((p for g in opt.param_groups for p in g["params"] if p.requires_grad), None)
                if p is not None:
                    self.each.append(p.register_post_accumulate_grad_hook(self._filled(id(opt))))
        except Exception:
            self._unwatch()

    def _filled(self, opt: int) -> Any:
        grads = self.grads

        def filled(param: Any) -> None:
            try:  # (inside the script's backward: nothing may raise into it)
                if len(grads) < MAX_CALLS:
                    grads.append([time.monotonic(), opt, caller_site()])
            except Exception:
                pass

        return filled

    def _accumulated(self, param: Any) -> None:
        try:  # (inside the script's backward: nothing may raise into it)
            if self.watch is not None and self.kept is None:
                _, grad, version = self.watch
                self.kept = [int(param.grad is grad and param.grad._version == version + 1), caller_site()]
        except Exception:
            pass

    def _unwatch(self) -> None:
        handle, self.handle, self.watch = self.handle, None, None
        each, self.each = self.each, []
        for h in [handle, *each]:
            try:
                if h is not None:
                    h.remove()
            except Exception:
                pass

    def _wrap(self, orig: Any, of_optimizer: bool) -> Any:
        calls = self.calls

        @functools.wraps(orig)
        def zero_grad(*args: Any, **kwargs: Any) -> Any:
            if len(calls) < MAX_CALLS:
                try:
                    calls.append([time.monotonic(), caller_site(),
                                  id(args[0]) if of_optimizer and args else None])
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
        self._unwatch()
        try:
            self.recorder.emit(ZeroGrads(self.t0, time.monotonic(), self.calls, self.kept,
                                         self.grads or None))
        except Exception:
            pass
