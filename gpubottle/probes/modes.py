"""model.train() and model.eval() as the script calls them: an evaluation that draws its batches
without a DataLoader (nanoGPT's estimate_loss, most LLM scripts) is an eval() ... train() span
between training steps, made by a function of the user's that the report can name.

One record per outer call: Module.eval() calls train(False), which recurses into every submodule;
only the first call on the stack is recorded. A failure records nothing and never stops the call.

An eval() also says whether the module holds layers that compute otherwise in eval mode (dropout,
batch norm) and whether an optimizer of the script's updates its parameters: training steps taken
after it with no train() since run with dropout off and batch norm on its running statistics
(analysis/eval_mode.py). Read once per module and optimizer count (a loop that calls eval() every
step walks its modules once).

After an eval() the next forward of any module says whether autograd was recording it (EvalForward):
a one-shot global forward pre-hook, removed at that forward or at the next train(). The same hook is
armed when a DataLoader iterator starts with gradients on (an evaluation pass the script never
marks with eval(), told from the training's passes later). Not where torch.compile has compiled
anything: a hook would change what its guards saw and recompile.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from typing import Any

from gpubottle.probes.hooks import NEVER, Wake
from gpubottle.probes.optimizer_info import held_params
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import caller_site, place, user_frame
from gpubottle.wire import EvalCalls, EvalForward, ModeSet

_first: _FirstForward | None = None  # the one-shot hook, once installed


def arm_first_forward() -> None:
    """Arm the one-shot hook for the next forward (a DataLoader iterator has just started with
    gradients on: if its pass turns out to evaluate, that forward says whether autograd recorded
    it, where the script never calls model.eval())."""
    if _first is not None:
        try:
            _first.arm(None)
        except Exception:
            pass


def install_modes(recorder: Recorder, status: dict[str, Any], hooks: Any = None, clock: Any = None) -> None:
    """`hooks`: probes/hooks.StepHooks, whose device clock marks each switch (an evaluation's
    start: the training's work still queued there is the training's). `clock`: the step clock,
    whose backward and optimizer counts tell an evaluation pass from a module frozen in eval()."""
    global _first
    try:
        from torch import nn
    except Exception as exc:
        status["modes"] = f"torch.nn not importable: {exc}"
        return
    orig = nn.Module.train
    if getattr(orig, "_gpubottle", False):
        return
    inside = threading.local()
    first = _first = _FirstForward(recorder)
    kinds = _ModuleKinds(nn)
    counter = _PassCalls(recorder, hooks, clock)
    if hooks is not None:
        hooks.add(counter)
    if hasattr(os, "register_at_fork"):  # (a DataLoader worker is no evaluation of the script's)
        os.register_at_fork(after_in_child=counter.forget)

    @functools.wraps(orig)
    def train(self: Any, mode: bool = True) -> Any:
        if getattr(inside, "depth", 0):
            return orig(self, mode)
        if hooks is not None and recorder.active:
            hooks.phase()
        inside.depth = 1
        try:
            result = orig(self, mode)
        finally:
            inside.depth = 0
        try:
            if mode:
                first.disarm()
                counter.done()
            else:
                first.arm(self)
                counter.arm(self)
        except Exception:
            pass
        try:
            if recorder.active:
                frame = user_frame()
                outer = user_frame(frame.f_back) if frame is not None and frame.f_back is not None else None
                moded, trained = (None, None) if mode else kinds.of(self, hooks)
                recorder.emit(ModeSet(time.monotonic(), int(bool(mode)), caller_site(),
                                      frame.f_code.co_name if frame is not None else None,
                                      place(outer.f_code.co_filename, outer.f_lineno) if outer else None,
                                      moded, trained))
        except Exception:
            pass
        return result

    train._gpubottle = True  # type: ignore[attr-defined]
    nn.Module.train = train  # type: ignore[method-assign]
    status["modes"] = None


def input_rows(first: Any) -> int:
    """The rows a module call's first tensor input (of one dimension or more) holds: its leading
    dimension; a 1-D float input is one sample's features, unbatched (an agent's
    `policy(torch.from_numpy(state).float())`), where 1-D ids may be a batch of them."""
    one = len(first.shape) == 1 and bool(getattr(first, "is_floating_point", bool)())
    return 1 if one else int(first.shape[0])


# Counting stops at this many calls (the record then says "more"): a script that evaluates once and
# never calls train() again (inference after model.eval()) would keep the hook for the whole run.
PASS_CALLS_MAX = 2048
# Passes counted a module: its first may come before the first training step (a sanity check, an
# agent's first rollout), which the analysis does not read as an evaluation.
PASSES_COUNTED = 2


class _PassCalls:
    """The calls of a module put in eval() and the rows they take, over its first evaluation passes
    (each to the next train()): an EvalCalls record each. PASSES_COUNTED a module: a hook on every
    module call costs ~2 us (3,000 calls of a one-row validation loop: ~6 ms on its 67-ms pass),
    the later passes none."""

    def __init__(self, recorder: Recorder, hooks: Any = None, clock: Any = None) -> None:
        self.recorder = recorder
        self.hooks = hooks
        self.clock = clock
        self.trained_at = 0  # the clock's backward and optimizer steps when the hook was armed
        self.seen: dict[int, int] = {}  # module id -> passes counted
        self.handle: Any = None
        self.calls = 0
        self.rows = 0
        self.name = ""
        self.site: str | None = None
        self.target: Any = None

    def arm(self, module: Any) -> None:
        if (self.handle is not None or self.seen.get(id(module), 0) >= PASSES_COUNTED
                or not self.recorder.active or _compiled(module)):
            return
        from torch.nn.modules.module import register_module_forward_pre_hook

        self.seen[id(module)] = self.seen.get(id(module), 0) + 1
        self.calls, self.rows, self.name, self.site = 0, 0, type(module).__name__, None
        # A global hook that keeps the module's own calls: one on the module would be in its
        # _forward_pre_hooks, which torch.jit.script (an export after eval()) tries to compile.
        self.target = module
        self.handle = register_module_forward_pre_hook(self._hook)
        self.trained_at = self._trained()
        if self.hooks is not None:
            self.hooks.sooner(self, self.hooks.steps + 1)

    def _trained(self) -> int:
        return int(self.clock.opt_steps + self.clock.backwards) if self.clock is not None else 0

    def on_step(self, step: int) -> Wake | None:
        """A training step (a backward, an optimizer step) since eval(): the module is frozen in
        eval mode (a teacher, a pretrained encoder, a target network), not evaluated in a pass that
        train() ends. A global hook slows every module call of the process (~1.5 us each: 3-5% of
        a 3.6-ms step of 24 MLP blocks), so it goes now, uncounted."""
        if self.handle is None:
            return NEVER
        if self._trained() > self.trained_at:
            self.forget()
            return NEVER
        return None

    def forget(self) -> None:
        """Remove the hook and record nothing (a frozen module; a forked DataLoader worker)."""
        handle, self.handle, self.target = self.handle, None, None
        if handle is not None:
            handle.remove()

    def finish(self, exc: BaseException | None) -> None:
        pass

    def reset(self, cfg: Any) -> None:
        pass

    def _hook(self, module: Any, args: Any) -> None:
        if module is not self.target:
            return
        try:
            import torch

            if torch._C._get_tracing_state() is not None or torch.compiler.is_compiling():
                return  # an export's trace of the model (its shapes read would warn): no pass
            first = next((a for a in args if hasattr(a, "shape")), None)
            if not self.calls:
                self.site = caller_site()
            self.calls += 1
            if first is not None and len(first.shape):
                self.rows += input_rows(first)
            if self.calls >= PASS_CALLS_MAX:
                self.done(whole=False)  # (torch iterates a copy of the hooks: removable here)
        except Exception:
            pass

    def done(self, whole: bool = True) -> None:
        handle, self.handle, self.target = self.handle, None, None
        if handle is None:
            return
        handle.remove()
        if self.calls and self.recorder.active:
            self.recorder.emit(EvalCalls(time.monotonic(), self.calls, self.rows, self.name, self.site,
                                         int(whole)))


class _ModuleKinds:
    """Per module: whether it holds mode-dependent layers, and whether the script's optimizers
    update its parameters; cached by the module's id and how many optimizers there are."""

    def __init__(self, nn: Any) -> None:
        self.moded_types = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)
        self.seen: dict[tuple[int, int], tuple[int, int | None]] = {}

    def of(self, module: Any, hooks: Any) -> tuple[int, int | None]:
        optimizers = list(getattr(hooks, "optimizers", None) or ()) if hooks is not None else None
        key = (id(module), len(optimizers) if optimizers is not None else -1)
        got = self.seen.get(key)
        if got is None:
            # A batch norm or dropout layer put in eval mode itself is the frozen-statistics idiom
            # of fine-tuning (the model trains around it): not a model left in eval mode.
            moded = int(not isinstance(module, self.moded_types)
                        and any(isinstance(m, self.moded_types) for m in module.modules()))
            trained = None
            if optimizers is not None:
                updated = {id(p) for p in held_params(optimizers)}
                trained = int(any(id(p) in updated and p.requires_grad for p in module.parameters()))
            got = self.seen[key] = (moded, trained)
        return got


def _compiled(module: Any) -> bool:
    """torch.compile in use: the module is compiled, or dynamo has compiled some frame."""
    if hasattr(module, "_orig_mod"):
        return True
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    try:
        return counters is not None and sum(counters["frames"].values()) > 0
    except Exception:
        return True  # unknown: leave the forward alone


# Callers under which a forward traces the model rather than evaluating it.
_TRACERS = tuple(f"{os.sep}torch{os.sep}{d}{os.sep}" for d in ("export", "jit", "onnx", "fx", "_dynamo"))


def _tracing() -> bool:
    f: Any = sys._getframe(2)
    while f is not None:
        if any(t in f.f_code.co_filename for t in _TRACERS):
            return True
        f = f.f_back
    return False


class _FirstForward:
    """The one-shot hook on the first forward after eval()."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.handle: Any = None

    def arm(self, module: Any) -> None:
        """`module`: the one eval() was called on (None: armed by a DataLoader iterator)."""
        if self.handle is not None or not self.recorder.active or _compiled(module):
            return
        from torch.nn.modules.module import register_module_forward_pre_hook

        self.handle = register_module_forward_pre_hook(self._hook)

    def disarm(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            handle.remove()

    def _hook(self, module: Any, args: Any) -> None:
        self.disarm()
        try:
            import torch

            if _tracing():
                return  # torch.export, jit.trace, ONNX export of the model: not an evaluation
            frame = user_frame()
            self.recorder.emit(EvalForward(time.monotonic(), int(torch.is_grad_enabled()), caller_site(),
                                           frame.f_code.co_name if frame is not None else None))
        except Exception:
            pass
