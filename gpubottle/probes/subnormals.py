"""Subnormal values in what the optimizers update, and in the weights of a model no optimizer
holds (an inference loop's), looked at a few times a run.

An x86 CPU computes on a subnormal float (below float32's smallest normal number, 1.2e-38) through
a slow path, many times slower per operation. Adam's first moment of a weight whose gradient stays
zero (a ReLU unit that died) decays by beta1 each step into that range and stays there: for the
smallest subnormals x * 0.9 rounds back to x. Measured here, an MLP trained with Adam at lr 1e-2 on a
CPU: from step ~750 on, 73% of exp_avg subnormal and the steps 3.2 -> 5-7 ms; with
torch.set_flush_denormal(True) the steps stay at their first pace. GPUs compute on float32
subnormals at full speed: CUDA tensors are left out.

Each look samples at most SAMPLE evenly spaced elements of each CPU floating tensor (parameters,
their gradients, the optimizer's state), so its cost does not grow with the model's size, only with
its number of tensors (MAX_PARAMS parameters a look, spread over the model; others at the next).
Measured: 0.7 ms a look on a 3-layer MLP with Adam (30 tensors), 4 ms on a 200-layer one (32 of its
parameters a look: 160 tensors).

The values a backward computes through turn subnormal too, where none of those tensors hold any:
a GRU's gradients shrinking through 200 time steps (vanishing gradients), 13% of its backward's
op outputs subnormal, its backward 0.92 s against 0.11 s with them flushed (measured here). So
once at step BACKWARD_STEP and once after BACKWARD_AGAIN_S, the next backward() runs under a
dispatch mode that samples each op's CPU output (SAMPLE elements): the kind "backward outputs". That
backward is slower for it (the GRU's: 0.92 -> 1.25 s), and recorded as perturbed.

Not every x86 CPU pays for them: ~1.5-10x an op on the Intel hosts these numbers come from, none on
an AMD EPYC host (0.3-0.7x). The first look that finds some also times this CPU on them
(subnormal_penalty, ~0.5 ms once), so a finding is said only where they cost something.
"""

from __future__ import annotations

import math
import time
from typing import Any

from gpubottle.probes.hooks import NEVER, StepHooks, Wake
from gpubottle.probes.recorder import Recorder
from gpubottle.wire import Perturbed, Subnormals

SAMPLE = 2048  # elements a tensor
MAX_PARAMS = 32  # parameters a look, each with its gradient and state (~4 ms measured)
# Two looks in a row that take longer (the thread's CPU, so that a look the scheduler paused is not
# counted) end the looking: a model of very many tensors.
SLOW_LOOK_S = 0.05
BACKWARD_KIND = "backward outputs"
BACKWARD_STEP = 5  # the first backward look follows this step (after the model-call count's)
BACKWARD_AGAIN_S = 60.0  # ...and the second the first step this long after the first look
# Op outputs counted a look, at most (~30 us each on this CPU, the GRU's 5,029 ops 0.3 s): a
# backward of more ops passes the rest through, counted as they come.
BACKWARD_MAX_OPS = 5000


def subnormal_penalty() -> float | None:
    """How much slower this CPU multiplies subnormal float32 values than normal ones: tensors of
    16K elements (under torch's grain for splitting an op over threads: one thread, the script's
    thread settings untouched), the best of seven interleaved rounds. None where it cannot tell."""
    import torch

    try:
        pairs = [(torch.full((1 << 14,), value), torch.full((1 << 14,), 0.9)) for value in (1.0, 1e-39)]
        best = [math.inf, math.inf]
        for _ in range(7):  # interleaved rounds, the best of each: other programs only add time
            for i, (x, y) in enumerate(pairs):
                t = time.perf_counter()
                for _ in range(10):
                    x.mul(y)
                best[i] = min(best[i], time.perf_counter() - t)
        return round(best[1] / best[0], 3) if 0 < best[0] < math.inf else None
    except Exception:
        return None


def interval_s(since_first_step: float) -> float:
    """Seconds to the next look: often at first (the first steps' values are the clean reference
    the later ones are held against), then rarely."""
    if since_first_step < 60:
        return 5.0
    return 30.0 if since_first_step < 600 else 120.0


def _params(opt: Any) -> list[list[tuple[str, Any]]]:
    """Per parameter: itself, its gradient and its optimizer state, each with its kind."""
    out = []
    for group in opt.param_groups:
        for p in group.get("params", ()):
            out.append([("parameters", p), ("gradients", p.grad),
                        *((str(k), t) for k, t in opt.state.get(p, {}).items())])
    return out


def _model_params(models: list[Any], seen: set[int]) -> list[list[tuple[str, Any]]]:
    """The called modules' parameters no optimizer holds (a loop without one: inference)."""
    out = []
    for m in models:
        try:
            params = list(m.parameters())
        except Exception:
            continue
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                out.append([("parameters", p)])
    return out


def count_subnormal(tensors: list[tuple[str, Any]]) -> list[list[Any]]:
    """[kind, sampled, subnormal] for the CPU floating tensors among `tensors`."""
    import torch

    picked: dict[tuple[str, Any], list[Any]] = {}
    for kind, t in tensors:
        if (not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.layout != torch.strided
                or not t.is_floating_point() or t.numel() == 0 or not t.is_contiguous()):
            continue
        flat = t.detach().reshape(-1)
        stride = max(1, flat.numel() // SAMPLE)
        # A stride that shares no factor with a row's length visits every column alike: one that
        # does would fall in step with the columns (a dead unit's weights in the next layer).
        last = t.shape[-1] if t.dim() else 1
        while stride > 1 and math.gcd(stride, last) != 1:
            stride += 1
        picked.setdefault((kind, t.dtype), []).append(flat[::stride][:SAMPLE])
    counts: dict[str, list[int]] = {}
    with torch.no_grad():
        for (kind, dtype), parts in picked.items():
            a = torch.cat(parts).abs()
            tiny = torch.finfo(dtype).tiny
            n = int(torch.count_nonzero((a < tiny) & (a > 0)))
            c = counts.setdefault(kind, [0, 0])
            c[0] += int(a.numel())
            c[1] += n
    return [[k, c[0], c[1]] for k, c in counts.items()]


def _dispatch_counter() -> Any:
    """A dispatch mode that counts the subnormal values among each op's CPU floating outputs
    (sampled as count_subnormal samples a tensor). Its own ops run with the mode off (torch takes a
    mode off its stack while its handler runs)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.counts = [0, 0]  # sampled, subnormal
            self.ops = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if self.ops >= BACKWARD_MAX_OPS:
                return out
            try:
                self.ops += 1
                outs = out if isinstance(out, (tuple, list)) else [out]
                for _, sampled, sub in count_subnormal([(BACKWARD_KIND, o) for o in outs]):
                    self.counts[0] += sampled
                    self.counts[1] += sub
            except Exception:
                pass
            return out

    return Counter()


class SubnormalProbe:
    """At step boundaries, on interval_s's schedule and at steps growing by half each time: the
    optimizers' CPU tensors sampled, and the weights of the models the loop calls that no
    optimizer holds."""

    def __init__(self, recorder: Recorder, hooks: StepHooks) -> None:
        self.recorder = recorder
        self.hooks = hooks
        self.reset(None)

    def reset(self, cfg: Any) -> None:
        self._first: float | None = None
        self._next = 0.0
        self._next_step = 2
        self._offset = 0  # where the next look starts when a model has more than MAX_PARAMS
        self._off = False
        self._slow = 0  # slow looks in a row
        self._penalty: float | None = None
        self._timed = False
        self._backward_looks = 0
        self._backward_at = math.inf  # when the second backward look is due

    def finish(self, exc: BaseException | None) -> None:
        pass

    def on_step(self, step: int) -> Wake:
        if not self._off:
            self._look(step)
        now = time.monotonic()
        looks = self._backward_looks
        due_now = looks == 0 and step >= BACKWARD_STEP or looks == 1 and now >= self._backward_at
        if not self._off and due_now:
            self._backward_looks += 1
            self._backward_at = now + BACKWARD_AGAIN_S
            self._arm_backward(step)
        if self._off:
            return NEVER
        due = self._backward_due()
        return (min(self._next_step, due[0]), min(self._next, due[1]))

    def _backward_due(self) -> Wake:
        """When the next backward look is: the step of the first, the time of the second, or none."""
        if self._backward_looks == 0:
            return (BACKWARD_STEP, math.inf)
        return (NEVER[0], self._backward_at) if self._backward_looks == 1 else NEVER

    def _arm_backward(self, step: int) -> None:
        """The next backward() (one call) under the counting mode: CPU runs only (GPUs compute on
        subnormals at full speed), not where torch.compile is in use (its graphs would see the
        mode), nor in a job of several processes."""
        import torch
        import torch.autograd as ag

        from gpubottle.probes.modes import _compiled

        if torch.cuda.is_initialized() or _compiled(None):  # type: ignore[no-untyped-call]
            return
        dist = getattr(torch, "distributed", None)  # (a job's backward runs its collectives' hooks)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return
        hooked = ag.backward

        def once(*args: Any, **kwargs: Any) -> Any:
            if ag.backward is once:
                ag.backward = hooked
            try:
                mode = _dispatch_counter()
            except Exception:
                return hooked(*args, **kwargs)
            t0 = time.monotonic()
            c0 = time.thread_time()
            with mode:
                result = hooked(*args, **kwargs)
            try:
                cost = time.thread_time() - c0
                t1 = time.monotonic()
                self.recorder.emit(Perturbed(t0, t1, "subnormal-backward"))
                sampled, sub = mode.counts
                if sub and not self._timed:
                    self._timed = True
                    self._penalty = subnormal_penalty()
                if sampled:
                    self.recorder.emit(Subnormals(t1, step + 1, [[BACKWARD_KIND, sampled, sub]],
                                                  round(cost, 6), self._penalty))
            except Exception:
                pass
            return result

        ag.backward = once

    def _look(self, step: int) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = self._next = now
        # Also at steps 2, 3, 5, 8, 12, ... (x1.5): a run of short steps gets a clean look not long
        # before the values turn (~750 steps into a run of 3-ms steps: 2.3 s, before the second
        # look on the clock), and one soon after.
        if now < self._next and step < self._next_step:
            return
        self._next = now + interval_s(now - self._first)
        while self._next_step <= step:
            self._next_step = -(-self._next_step * 3 // 2)
        params = [p for opt in list(self.hooks.optimizers) for p in _params(opt)]
        params += _model_params(list(self.hooks.models), {id(p[0][1]) for p in params})
        if not params:
            return
        if len(params) > MAX_PARAMS:  # every k-th, from a shifting start: each look spans the model
            k = -(-len(params) // MAX_PARAMS)
            self._offset = (self._offset + 1) % k
            params = params[self._offset::k]
        tensors = [kt for p in params for kt in p]
        t0 = time.thread_time()
        groups = count_subnormal(tensors)
        cost = time.thread_time() - t0
        self._slow = self._slow + 1 if cost > SLOW_LOOK_S else 0
        self._off = self._slow >= 2
        if groups and not self._timed and any(g[2] for g in groups):
            self._timed = True  # (the first look that finds some: runs that never do pay nothing)
            self._penalty = subnormal_penalty()
        if groups:
            self.recorder.emit(Subnormals(now, step, groups, round(cost, 6), self._penalty))
