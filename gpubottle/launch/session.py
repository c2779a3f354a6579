"""One process's probe session: the recorder, the step hooks and the torch probes around a body (the
script under the bootstrap, or a rank's function under mp.spawn), and the End record that says how
the body ended."""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from gpubottle.clock import StepClock
from gpubottle.options import ChildConfig
from gpubottle.probes.gc_phase import collect_if_due
from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper, emit_cost
from gpubottle.wire import End, ProbeCost, Probes, RankStart, Start


class BadTarget(Exception):
    """The module to run does not exist: a usage error, not the script's failure."""


def _flush_on_os_exit(recorder: Recorder) -> None:
    """os._exit skips every finally and atexit: record the exit and flush before it (a no-op in
    forked DataLoader workers, which leave by os._exit too, since the recorder is off there)."""
    original = os._exit

    def _exit(code: int) -> None:
        if recorder.active:
            recorder.emit(End("exit", repr(code), time.monotonic()))
            recorder.close()
        original(code)

    os._exit = _exit  # type: ignore[assignment]


def open_session(cfg: ChildConfig, also: Mapping[str, Callable[[Any], str | None]] | None = None,
                 clock: StepClock | None = None) -> tuple[Recorder, StepHooks | None]:
    """The recorder and the probes of one process: the script's, or one rank's. `also`: patches
    of the launch stage's own, made once torch is imported (install_when_torch_imported); `clock`:
    the step clock, for a caller that resets it (gpubottle.profile used again)."""
    recorder = Recorder(cfg.events, cfg.flush_interval)
    stopper = Stopper(recorder, clock or StepClock(), cfg.steps, cfg.duration, agreed=cfg.stop_at)
    recorder.emit(Start(os.getpid(), time.monotonic(), time.time()))
    if cfg.rank is not None:
        recorder.emit_sticky("rank", RankStart(**cfg.rank))
    _flush_on_os_exit(recorder)
    hooks = None
    try:  # the script's own options, declared before it parses them (often before importing torch)
        from gpubottle.probes.knobs import watch_argparse

        watch_argparse()
    except Exception:
        pass
    try:
        from gpubottle.probes.install import install_when_torch_imported

        hooks = step_probes(recorder, cfg, stopper)
        install_when_torch_imported(recorder, stopper, hooks, cfg.trial, also)
    except Exception as exc:  # fail open: the script runs without probes
        recorder.emit(Probes({"torch": f"probe install failed: {exc!r}"}))
    recorder.flush()
    return recorder, hooks


def step_probes(recorder: Recorder, cfg: ChildConfig, stopper: Stopper | None = None) -> StepHooks:
    """The probes heard at every step boundary, in the order they run there (`stopper`: the one
    whose clock counts the steps, for the blocks of steps run without hooks to measure them)."""
    from gpubottle.probes.checkpointing import CheckpointProbe
    from gpubottle.probes.cuda import CudaProbe
    from gpubottle.probes.device_clock import DeviceClock
    from gpubottle.probes.model_calls import ModelCallCounter
    from gpubottle.probes.recompiles import RecompileProbe
    from gpubottle.probes.subnormals import SubnormalProbe
    from gpubottle.probes.zero_grads import ZeroGradWindow

    hooks = StepHooks()
    hooks.at_first_step = functools.partial(collect_if_due, recorder.gc_watch)
    # First: its mark is the step's end on the device, recorded before a census or the profiler
    # window at the same boundary leaves the GPU idle (that idle is the next, instrumented step's).
    hooks.add(DeviceClock(recorder, hooks.listen))
    leaks = None
    if cfg.census_request:
        from gpubottle.probes.leaks import LeakProbe

        leaks = LeakProbe(recorder, cfg.census_request)
        hooks.add(leaks)
    hooks.add(CudaProbe(recorder, hooks, cfg.window, cfg.snapshot, leaks))
    hooks.add(ModelCallCounter(recorder, hooks.models, hooks.optimizers))
    hooks.add(ZeroGradWindow(recorder, hooks.optimizers))
    hooks.add(SubnormalProbe(recorder, hooks))
    hooks.add(CheckpointProbe(recorder))
    hooks.add(RecompileProbe(recorder))
    if stopper is not None:  # last: the others have their look at the step before a block
        from gpubottle.probes.unhooked import HooksOff

        off = HooksOff(recorder, stopper, hooks, enabled=not cfg.trial)
        hooks.off = off
        hooks.add(off)
    return hooks


def _leave_process_group(stop: BaseException) -> None:
    """A script stopped early by --steps/--duration skips its own destroy_process_group, and the
    stop's traceback keeps its locals (a DDP model, whose reducer holds the group) in a cycle that
    only a garbage collection frees. Left to interpreter exit, a rank once ended by SIGABRT
    ("terminate called without an active exception": gloo's threads still joinable when the C++
    statics went; 1 run in 12 beside load, never without the stop). Each rank frees the script's
    frames and leaves its group as the script's own end would. Fail open."""
    import sys
    import traceback

    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return
        traceback.clear_frames(stop.__traceback__)
        gc.collect()
        dist.destroy_process_group()
    except Exception:
        pass


def finish_probes(recorder: Recorder, hooks: StepHooks | None, per_call: float,
                  exc: BaseException | None, opened: tuple[float, float] = (0.0, 0.0)) -> None:
    """The step hooks' last word (peaks, an OOM's state) and the probes' own cost, before End.
    `per_call`: what a hook that does not time itself costs (emit_cost)."""
    if hooks is not None:
        hooks.finish(exc)
    recorder.emit(ProbeCost(per_call, recorder.written + recorder.pending, recorder.writer_cpu_s,
                            hooks.spent_s if hooks is not None else 0.0, opened[0], opened[1],
                            recorder.hooks_s, recorder.timed, *recorder.installed,
                            hooks.moved_gc_s if hooks is not None else 0.0))


def run_session(cfg: ChildConfig, body: Callable[[], object],
                also: Mapping[str, Callable[[Any], str | None]] | None = None,
                began: float | None = None) -> int:
    """Run `body` (the script, or a rank's function) with the probes; End says how it ended.
    `began`: when this process's first statement ran, before gpubottle's imports (what gpubottle's
    start in it cost, up to the script's first line, is said in the run's account).

    Returns 0 when it completed or was stopped early; its exceptions (SystemExit too) propagate.
    """
    recorder, hooks = open_session(cfg, also)
    per_call = emit_cost()
    opened = (began, time.monotonic()) if began is not None else (0.0, 0.0)

    def finish(exc: BaseException | None) -> None:
        finish_probes(recorder, hooks, per_call, exc, opened)

    # gpubottle's objects (~20k: its modules, the supervisor's where this process was forked from
    # it) out of the script's garbage collections: each full one walked them, and `import torch`
    # made one more (0.25 s of collections against plain python's 0.16 s on one core).
    gc.freeze()
    try:
        body()
    except BadTarget as bad:
        recorder.emit(End("bad-target", str(bad), time.monotonic()))
        recorder.close()
        raise
    except EarlyStop as stop:
        finish(None)
        recorder.emit(End("stopped", str(stop), time.monotonic()))
        recorder.flush()
        _leave_process_group(stop)
    except SystemExit as exc:
        finish(None)
        recorder.emit(End("exit", repr(exc.code), time.monotonic()))
        recorder.close()
        raise
    except BaseException as exc:
        finish(exc)
        recorder.emit(End("exception", f"{type(exc).__name__}: {exc}"[:500], time.monotonic()))
        recorder.close()
        raise
    else:
        finish(None)
        recorder.emit(End("completed", None, time.monotonic()))
    recorder.close()
    return 0


class InProcessSession:
    """The probes of a process that profiles itself (gpubottle.profile(), %%gpubottle): installed by
    the first profile, re-targeted by the next (torch may already be imported; the hooks stay)."""

    def __init__(self) -> None:
        self.recorder: Recorder | None = None
        self.hooks: StepHooks | None = None
        self.clock: StepClock | None = None

    def start(self, cfg: ChildConfig) -> None:
        if self.recorder is None or self.clock is None:
            self.clock = StepClock()
            self.recorder, self.hooks = open_session(cfg, clock=self.clock)
            return
        self.recorder.reopen(cfg.events, Start(os.getpid(), time.monotonic(), time.time()))
        self.clock.reset()
        if self.hooks is not None:
            self.hooks.reset(cfg)
        self.recorder.flush()


SESSION = InProcessSession()
