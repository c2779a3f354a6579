"""The step-boundary hub: what runs in the script's process each time the step clock completes a
step, and once when the script ends.

torch_hooks.py sees the events (batches, backward calls, optimizer steps) and asks the clock
whether a step completed; when it did, every probe added here gets `on_step(step)` (the CUDA memory
readings and the profiler window, the leak census, the per-step cost probes). Each probe fails
open on its own: one that raises is dropped from later steps, never the training's problem.
"""

from __future__ import annotations

import math
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from gpubottle.options import ChildConfig

# What a probe's on_step returns: when it wants the next call, the step or the monotonic time,
# whichever comes first; None: at the next step. A CPU run's probes are mostly idle between looks
# (a census a second, a look at the weights on a schedule): five called every step cost a 3.5-ms
# step of benchmarks/many_threads.py ~17 us on its one core, one clock read and a compare ~0.2.
Wake = tuple[int, float]
NEVER: Wake = (sys.maxsize, math.inf)
# How soon the CUDA probes see a script that starts using CUDA after its first steps (most
# scripts move the model before the loop: they see it at the first step).
CUDA_RECHECK_S = 0.5


def wake_in(seconds: float) -> Wake:
    """Not before `seconds` from now, whatever the step."""
    return (sys.maxsize, time.monotonic() + seconds)


class StepProbe(Protocol):
    def on_step(self, step: int) -> Wake | None: ...

    def finish(self, exc: BaseException | None) -> None: ...

    def reset(self, cfg: ChildConfig) -> None: ...


class Blocks(Protocol):
    """The probe that runs blocks of steps without the hot hooks (probes/unhooked.py)."""

    off: bool  # a block is running

    def tick(self) -> bool: ...  # True: the step was a long gap, the block ended before it

    def abort(self) -> None: ...

    def unwrap_with(self, owner: Any, name: str, original: Any) -> None: ...

    def drop_during(self, hooks: dict[Any, Any], key: Any) -> None: ...


# A step-boundary call longer than this is a heavier probe's (the profiler window starting, a
# census): the account measures those by the steps they slowed. Shorter ones are the per-step cost
# (the device clock's event records and queries, the CUDA probe's checks), summed as they run: no
# calibration elsewhere sees them (the H200's 2-ms launch-bound loop: ~60 us a step unaccounted).
STEADY_CALL_MAX_S = 0.002


class StepHooks:
    def __init__(self) -> None:
        self.steps = 0
        self.spent_s = 0.0  # the probes' short calls at step boundaries and fetches, all together
        self.probes: list[StepProbe] = []
        self._due: dict[int, Wake] = {}  # id(probe) -> its next call (absent: due now)
        self._wake: Wake = (0, 0.0)  # the earliest of them
        self.running = False  # inside the probes' own step-boundary work (not the script's)
        self.fetchers: list[Any] = []  # probes that also hear each DataLoader fetch (`fetch(began)`)
        # The optimizers the script built (their state is "model state" in what fills GPU memory).
        self.optimizers: weakref.WeakSet[Any] = weakref.WeakSet()
        # The modules the loop calls outermost (model_calls sees them at its counted step): the model
        # of a loop without an optimizer (inference), whose weights probes/subnormals.py looks at.
        self.models: weakref.WeakSet[Any] = weakref.WeakSet()
        # The probe that runs blocks of steps without the hot hooks to measure their cost in place
        # (the optimizer's post-step hook counts those steps for it), if any.
        self.off: Blocks | None = None
        # Run once as the first step completes (probes/gc_phase.py); its seconds, gpubottle's, are
        # kept apart from spent_s, the steady calls a step's in-place cost is read against.
        self.at_first_step: Callable[[], float] | None = None
        self.moved_gc_s = 0.0

    def add(self, probe: StepProbe) -> None:
        self.probes.append(probe)
        self._due.pop(id(probe), None)  # (an id a dropped probe had before)
        self._wake = (0, 0.0)
        if callable(getattr(probe, "fetch", None)) and getattr(probe, "fetching", True):
            self.fetchers.append(probe)

    def listen(self, probe: Any) -> None:
        """A probe that hears fetches from now on: the device's clock, once the script uses CUDA.
        Until then a fetch makes no call at all (two calls a fetch that did nothing on a CPU run
        cost the 0.65-ms steps of benchmarks/tiny_steps.py 13.5 us each in place, measured by
        turning them off in alternate 200-step blocks of one run)."""
        if probe not in self.fetchers:
            self.fetchers.append(probe)

    def _spent(self, t0: float) -> None:
        dt = time.perf_counter() - t0
        if dt < STEADY_CALL_MAX_S:
            self.spent_s += dt

    def fetch(self, began: bool) -> None:
        """Just before (`began`) and just after each DataLoader fetch."""
        t0 = time.perf_counter()
        for probe in self.fetchers:
            try:
                probe.fetch(began)
            except Exception:
                self.fetchers.remove(probe)
                break
        self._spent(t0)

    def phase(self) -> None:
        """Where a phase outside the training step may begin: the device clock marks it, and a
        block of steps without hooks ends (the phase's records are wanted)."""
        if self.off is not None:
            self.off.abort()
        for probe in self.fetchers:
            mark = getattr(probe, "phase", None)
            if mark is not None:
                try:
                    mark()
                except Exception:
                    pass

    def patch_torch(self, torch: Any, status: dict[str, Any]) -> None:
        """Probes that wrap torch functions of their own do it now (torch has just been imported)."""
        for probe in self.probes:
            patch = getattr(probe, "patch_torch", None)
            if patch is not None:
                try:
                    patch(torch, status)
                except Exception as exc:
                    status[type(probe).__name__] = repr(exc)[:200]

    def sooner(self, probe: object, step: int) -> None:
        """`probe` is due again at `step` if that is sooner than it asked for (a block of steps
        without hooks ended early by a phase: the next begins after one more hooked stretch)."""
        due_step, due_t = self._due.get(id(probe), (0, 0.0))
        if step < due_step:
            self._due[id(probe)] = (step, due_t)
            self._wake = (min(self._wake[0], step), self._wake[1])

    def reset(self, cfg: ChildConfig) -> None:
        """A new use of the same probes in this process (gpubottle.profile() again): the step count
        and each probe's per-use state start over."""
        self.steps = 0
        self.spent_s = 0.0
        self.moved_gc_s = 0.0
        self._due.clear()
        self._wake = (0, 0.0)
        for probe in list(self.probes):
            try:
                probe.reset(cfg)
            except Exception:
                self.probes.remove(probe)

    def on_step(self) -> None:
        self.steps += 1
        step = self.steps
        if step == 1 and self.at_first_step is not None:
            self.moved_gc_s += self.at_first_step()
        if step < self._wake[0] and time.monotonic() < self._wake[1]:
            return  # no probe is due
        self.running = True
        t0 = time.perf_counter()
        now = time.monotonic()
        wake_step, wake_t = NEVER
        self._wake = (0, 0.0)  # until this call completes (an EarlyStop leaves every probe due)
        try:
            for probe in list(self.probes):
                due_step, due_t = self._due.get(id(probe), (0, 0.0))
                if step >= due_step or now >= due_t:
                    try:
                        wake = probe.on_step(step)
                    except Exception:
                        self.probes.remove(probe)
                        self._due.pop(id(probe), None)
                        continue
                    due_step, due_t = (step + 1, math.inf) if wake is None else wake
                    self._due[id(probe)] = (due_step, due_t)
                wake_step, wake_t = min(wake_step, due_step), min(wake_t, due_t)
            self._wake = (wake_step, wake_t)
        finally:
            self.running = False
            self._spent(t0)

    def finish(self, exc: BaseException | None) -> None:
        for probe in self.probes:
            try:
                probe.finish(exc)
            except Exception:
                pass
