"""Hooks in torch: DataLoader waits and configuration, optimizer steps, backward calls.

Installed only once the script itself imports torch (see install.py), so nothing about the script's
import order changes. Every wrapper calls the original first-class and records around it; a failure
to record is swallowed, a failure of the original propagates untouched.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import weakref
from typing import Any

from gpubottle.probes import knobs
from gpubottle.probes.batch_leaves import BatchLeavesProbe
from gpubottle.probes.debug_switches import install_debug_switches
from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.hot_records import BACKWARD, BATCH, NAN, OPTIMIZER_STEP
from gpubottle.probes.loader_config import loader_config
from gpubottle.probes.math_modes import install_math_modes
from gpubottle.probes.modes import arm_first_forward, install_modes
from gpubottle.probes.optimizer_info import params_info
from gpubottle.probes.rebuilt import UserLoaders
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper
from gpubottle.probes.sites import (
    caller_site,
    calls_cycle,
    library_builder,
    place,
    qualname,
    user_frame,
)
from gpubottle.probes.thread_sched import FetchSampling, ThreadSched
from gpubottle.probes.trial import FUSED_KEY, REPLAY_KEY, Replay, fuse_optimizers, loader_kwargs
from gpubottle.probes.trial import threads as trial_threads
from gpubottle.wire import (
    IterStarted,
    LoaderBuilt,
    OptimizerBuilt,
    RankStart,
    ThreadsSet,
    TorchInfo,
)

_monotonic = time.monotonic
_get_ident = threading.get_ident


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def install(recorder: Recorder, stopper: Stopper, status: dict[str, Any], hooks: StepHooks | None = None,
            trial: dict[str, Any] | None = None, imported: tuple[float, float] | None = None) -> None:
    """`imported`: when the script's `import torch` began and ended."""
    import torch

    trial = trial or {}
    forced = trial_threads(trial)
    if forced:
        torch.set_num_threads(forced)  # a --try-fixes trial: before the script's first op
    env = {k: os.environ[k] for k in THREAD_ENV if k in os.environ}
    t0, t1 = imported or (None, None)
    user = user_frame()  # the script's `import torch` (or its import of a library that imports it)
    site = place(user.f_code.co_filename, user.f_lineno) if user is not None else None
    info = TorchInfo(torch.__version__, torch.get_num_threads(), torch.get_num_interop_threads(), env,
                     import_site=site)
    recorder.emit_sticky("torch", info, now=False)  # a later file (gpubottle.profile again) gets it
    recorder.emit(info._replace(import_t0=t0, import_t1=t1))  # without the import, long past by then
    _install_threads(recorder, torch, status, forced)
    install_debug_switches(recorder, torch, status)
    install_math_modes(recorder, torch, status)
    _install_dataloader(recorder, stopper, status, hooks, trial)
    _install_optimizer(recorder, stopper, status, hooks, trial)
    if hooks is not None:
        hooks.patch_torch(torch, status)
    _install_backward(recorder, stopper, status, hooks)
    _install_process_group(recorder, status)
    install_modes(recorder, status, hooks, stopper.clock)


def _install_threads(recorder: Recorder, torch: Any, status: dict[str, Any],
                     forced: int | None = None) -> None:
    """Where the script sets torch's thread pools, and to what: read at import time, the count
    misses a set_num_threads(8) that the script makes afterwards."""
    for name, field in (("set_num_threads", "threads"), ("set_num_interop_threads", "interop")):
        orig = getattr(torch, name, None)
        if orig is None:
            continue

        def wrapper(n: Any, _orig: Any = orig, _field: str = field) -> Any:
            if forced and _field == "threads":
                n = forced  # a trial's thread count wins over the script's
            result = _orig(n)
            try:
                if recorder.active:
                    site = caller_site()
                    source = knobs.sources(user_frame(), {"n": 0}).get("n")
                    recorder.emit(ThreadsSet(int(n), None, site, source) if _field == "threads"
                                  else ThreadsSet(None, int(n), site, source))
            except Exception:
                pass
            return result

        setattr(torch, name, functools.wraps(orig)(wrapper))
    status["threads"] = None


def _step_done(stopper: Stopper, hooks: StepHooks | None, completed: bool) -> None:
    """After a probe event: at the end of a step of the clock, the step-boundary probes (CUDA
    memory, the profiler window, censuses; fail-open), then --steps/--duration."""
    if completed and hooks is not None:
        hooks.on_step()
    if stopper.armed:
        stopper.check(completed)


def _install_dataloader(recorder: Recorder, stopper: Stopper, status: dict[str, Any],
                        hooks: StepHooks | None = None, trial: dict[str, Any] | None = None) -> None:
    try:
        from torch.utils.data import dataloader as dl
    except Exception as exc:
        status["dataloader"] = f"torch.utils.data not importable: {exc}"
        return
    counter = [0]
    clock = stopper.clock
    orig_init = dl.DataLoader.__init__
    orig_get_iter = dl.DataLoader._get_iterator
    orig_iter = dl.DataLoader.__iter__
    orig_next = dl._BaseDataLoaderIter.__next__

    replays: dict[int, Replay] = {}
    replay = bool(trial and trial.get(REPLAY_KEY))
    sched = ThreadSched()
    sampling = FetchSampling()
    import torch

    grad_enabled = torch.is_grad_enabled
    hot = recorder.hot  # the packed records (probes/hot_records.py): no object kept a record

    @functools.wraps(orig_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if trial:
            try:
                args, kwargs = loader_kwargs(orig_init, args, kwargs, trial)
            except Exception:
                pass  # the script's own arguments, unchanged
        orig_init(self, *args, **kwargs)
        try:
            if recorder.active:
                register(self, built_here=True)
        except Exception:
            pass

    def register(loader: Any, built_here: bool) -> int:
        """A loader's id and configuration. One built before the probes were installed (a notebook's
        earlier cell, before gpubottle.profile) is registered when first iterated: its settings are
        known, not where they were written."""
        counter[0] += 1
        lid = counter[0]
        object.__setattr__(loader, "_gpubottle_id", lid)
        cfg = loader_config(loader, lid)
        cfg["t"] = _monotonic()
        cfg["site"] = caller_site() if built_here else None
        cfg["built_by"] = library_builder() if built_here else None
        if built_here and cfg["built_by"] is None:  # where each setting's value comes from
            cfg["sources"] = knobs.sources(user_frame(), knobs.LOADER_KNOBS, "DataLoader")
            users.remember(loader.dataset, cfg)
        elif built_here:
            first = users.origin(loader.dataset)
            if first is not None:  # a wrapper rebuilt the user's loader: its arguments are there
                cfg["site"], cfg["sources"] = first.get("site"), first.get("sources", {})
                cfg["rebuilt_by"], cfg["built_by"] = cfg["built_by"], None
        recorder.emit_sticky(("loader", lid), LoaderBuilt(cfg))
        return lid

    users = UserLoaders()
    leaves = BatchLeavesProbe(recorder)

    def started(loader: Any, it: Any, began: float) -> None:
        lid = getattr(loader, "_gpubottle_id", None)
        if lid is None:
            lid = register(loader, built_here=False) if recorder.active else -1
        it._gpubottle_id = lid
        pids = [w.pid for w in getattr(it, "_workers", [])]
        # Evaluation passes iterate under no_grad (or inference_mode): one flag an epoch.
        if hooks is not None:
            hooks.phase()  # an epoch (or an evaluation pass) begins: the device's backlog there
        grad = int(grad_enabled())
        recorder.emit(IterStarted(lid, _monotonic(), pids, grad, began, caller_site(),
                                  int(calls_cycle(user_frame()))))
        if grad:
            arm_first_forward()

    @functools.wraps(orig_get_iter)
    def _get_iterator(self: Any) -> Any:
        began = _monotonic()
        it = orig_get_iter(self)
        try:
            started(self, it, began)
        except Exception:
            pass
        return it

    @functools.wraps(orig_iter)
    def __iter__(self: Any) -> Any:
        """Persistent workers: every epoch after the first reuses the iterator (its _reset), and
        _get_iterator is not called again; the epoch (or an evaluation pass over the same loader)
        starts all the same."""
        began = _monotonic()
        reused = getattr(self, "_iterator", None) is not None
        it = orig_iter(self)
        if reused and it is getattr(self, "_iterator", None) and recorder.active:
            try:
                started(self, it, began)
            except Exception:
                pass
        return it

    @functools.wraps(orig_next)
    def __next__(self: Any) -> Any:
        if not recorder.hot_on:  # (closed, or its cost being measured: probes/unhooked.py)
            return orig_next(self)
        # An inference loop's steps run from one fetch to the next.
        entered = _monotonic()
        done = clock.fetch(entered)
        own = _monotonic() - entered  # the hook's own time (the step probes are timed apart)
        _step_done(stopper, hooks, done)
        # The CPU of the thread that waits: with num_workers=0 the loading itself, with workers what
        # taking a batch from them costs (unpickling, shared-memory setup), which no number of
        # workers takes off the main process. The thread's own, not the process's: the math
        # library's threads spin for a while after each backward, and would be counted as loading.
        # (Per-sample tensors are far below torch's intra-op grain, so loading runs on this thread.)
        # With its run-queue time: a thread that waited for a core to take a ready batch is starved
        # of CPU, not waiting on workers.
        if hooks is not None and hooks.fetchers:
            hooks.fetch(True)
        before = _monotonic()
        began = sched.now() if sampling.take() else None  # None: not read (most short ones)
        t0 = _monotonic()
        end = 0
        try:
            if replay:  # a --try-fixes upper-bound trial: input that costs nothing
                lid = getattr(self, "_gpubottle_id", -1)
                return replays.setdefault(lid, Replay()).next(lambda: orig_next(self))
            batch = orig_next(self)
        except StopIteration:
            end = 1
            raise
        finally:
            t1 = _monotonic()
            cpu, rq = sched.since(began) if began is not None else (NAN, NAN)
            sampling.saw(t1 - t0)
            ident = _get_ident()
            hot((BATCH, getattr(self, "_gpubottle_id", -1), t0, t1, cpu, end,  # (cpu: a float or NAN)
                 NAN if rq is None else rq, NAN if ident == _MAIN_THREAD else ident))
            recorder.timed_hook(own + (t0 - before) + (_monotonic() - t1))
            if hooks is not None and hooks.fetchers:
                hooks.fetch(False)
        if len(leaves.seen) < 8:  # (a set lookup a batch until then; nothing after)
            leaves.see(getattr(self, "_gpubottle_id", -1), batch)
        return batch

    dl.DataLoader.__init__ = __init__  # type: ignore[method-assign]
    dl.DataLoader._get_iterator = _get_iterator  # type: ignore[method-assign]
    dl.DataLoader.__iter__ = __iter__  # type: ignore[method-assign]
    dl._BaseDataLoaderIter.__next__ = __next__  # type: ignore[method-assign]
    if hooks is not None and hooks.off is not None:
        hooks.off.unwrap_with(dl._BaseDataLoaderIter, "__next__", orig_next)
    status["dataloader"] = None


_MAIN_THREAD = threading.main_thread().ident  # a record's thread: None for this one (no bytes)



def _install_optimizer(recorder: Recorder, stopper: Stopper, status: dict[str, Any],
                       hooks: StepHooks | None, trial: dict[str, Any]) -> None:
    try:
        from torch.optim import optimizer as optmod
    except Exception as exc:
        status["optimizer"] = f"torch.optim not importable: {exc}"
        return
    if trial.get(FUSED_KEY):
        fuse_optimizers()  # a --try-fixes trial of fused=True
    orig_init = optmod.Optimizer.__init__
    clock = stopper.clock
    began: dict[int, float] = {}  # optimizer -> when its step() began
    hot = recorder.hot
    off = hooks.off if hooks is not None else None  # blocks of steps without hooks (unhooked.py)

    last_first: dict[str | None, Any] = {}  # a line -> a weak reference to its last build's first parameter

    @functools.wraps(orig_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, *args, **kwargs)
        try:
            if recorder.active:
                if hooks is not None:
                    hooks.optimizers.add(self)
                clock.optimizer_created(id(self))
                info = params_info(self)
                site = caller_site()
                first = next((p for g in self.param_groups for p in g["params"]), None)
                before = last_first.get(site)
                same = int(before is not None and first is not None and before() is first)
                if first is not None:
                    last_first[site] = weakref.ref(first)
                recorder.emit(OptimizerBuilt(id(self), qualname(self), site, info.dtype,
                                             info.tensors, info.impl, info.can_fuse, same, info.groups))
        except Exception:
            pass

    def pre_hook(opt: Any, args: Any, kwargs: Any) -> None:
        began[id(opt)] = _monotonic()

    def post_hook(opt: Any, args: Any, kwargs: Any) -> None:
        # A step of a block with the hooks off: counted, nothing recorded (unless it was a long
        # gap: the block ended before it, and it is recorded as any hooked step).
        if not recorder.hot_on and (off is None or not off.off or not off.tick()):
            return
        t = _monotonic()
        ident = _get_ident()
        hot((OPTIMIZER_STEP, id(opt), t, began.pop(id(opt), NAN), NAN if ident == _MAIN_THREAD else ident))
        done = clock.optimizer_step(id(opt), t)
        recorder.timed_hook(_monotonic() - t)  # the step probes and --steps' stop: timed apart
        _step_done(stopper, hooks, done)

    optmod.Optimizer.__init__ = __init__  # type: ignore[method-assign]
    register = getattr(optmod, "register_optimizer_step_post_hook", None)
    if register is None:
        status["optimizer"] = "this torch has no global optimizer hooks (needs torch>=2.0)"
        return
    register_pre = getattr(optmod, "register_optimizer_step_pre_hook", None)
    if register_pre is not None:
        handle = register_pre(pre_hook)
        table = getattr(optmod, "_global_optimizer_pre_hooks", None)
        if off is not None and isinstance(table, dict) and getattr(handle, "id", None) in table:
            off.drop_during(table, handle.id)
    register(post_hook)
    status["optimizer"] = None


def _install_process_group(recorder: Recorder, status: dict[str, Any]) -> None:
    """A script that joins a process group of two or more ranks with no rank in its environment (it
    passes rank= and world_size= from its own arguments) is one rank of a job all the same: its
    rank, the world size, its node and the job's id are recorded when the group is up. A process
    already known as a rank (torchrun's, mp.spawn's, a cluster launcher's) has said so."""
    try:
        import torch.distributed as dist

        orig = dist.init_process_group
    except Exception as exc:
        status["process-group"] = f"torch.distributed not importable: {exc}"
        return

    @functools.wraps(orig)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = orig(*args, **kwargs)
        try:
            if recorder.active and not recorder.has_sticky("rank"):
                world = int(dist.get_world_size())
                if world > 1:
                    import socket

                    from gpubottle.rundir import int_env, job_id

                    me = RankStart(int(dist.get_rank()), int_env("LOCAL_RANK"), world, socket.gethostname(),
                                   "init_process_group", job_id(os.environ))
                    recorder.emit_sticky("rank", me)
        except Exception:
            pass  # never the script's problem
        return result

    dist.init_process_group = init_process_group
    status["process-group"] = None


def _install_backward(recorder: Recorder, stopper: Stopper, status: dict[str, Any],
                      hooks: StepHooks | None = None) -> None:
    try:
        import torch.autograd as ag
    except Exception as exc:
        status["backward"] = f"torch.autograd not importable: {exc}"
        return
    orig = ag.backward
    clock = stopper.clock
    hot = recorder.hot

    @functools.wraps(orig)
    def backward(*args: Any, **kwargs: Any) -> Any:
        t0 = _monotonic()
        result = orig(*args, **kwargs)
        try:
            if recorder.hot_on:
                t1 = _monotonic()
                hot((BACKWARD, t0, t1))
                done = clock.backward(t0, t1)
                recorder.timed_hook(_monotonic() - t1)
                _step_done(stopper, hooks, done)  # no torch.optim: a step ends here
        except EarlyStop:
            raise
        except Exception:
            pass
        return result

    ag.backward = backward
    if hooks is not None and hooks.off is not None:
        hooks.off.unwrap_with(ag, "backward", orig)
    status["backward"] = None
