"""What one part of the probes costs a loop in place, measured inside one run: the part is turned
off and on in alternate blocks of BLOCK optimizer steps, and each block's mean step is kept by
state; the paired difference of neighbouring blocks is the part's cost a step, the machine's drift
cancelled. A hook's own clock sees only its body; this also sees what it costs the loop around it
(its caches, the wrappers' frames), e.g. benchmarks/tiny_steps.py's 0.65-ms steps: the whole
recorder +78..+90 us a step where the hooks timed ~39 themselves, the DataLoader probe +53. Beside
the wall time a step, the CPU time of the thread that steps (the optimizer's): where other threads
or programs share the core, a step's wall time swings with them, and its thread's CPU much less.

    gpubottle run --no-stacks benchmarks/hooks_in_place.py PART benchmarks/tiny_steps.py --steps 20000

PART: all (every hook's work: the recorder closed), next (the DataLoader probe unwrapped),
backward (torch.autograd.backward unwrapped), opt (the optimizer step's pre/post hooks made empty
functions: torch iterates their dicts, so they stay registered), steps (the step-boundary probes),
fetch (the probes that hear each fetch), sched (the thread's schedstat reads), emit (the records).
Off blocks lose what the part records: a measurement, not a run to diagnose.
"""

from __future__ import annotations

import atexit
import gc
import runpy
import statistics
import sys
import time
from typing import Any, cast

from torch.optim import optimizer as optmod

from gpubottle.probes import hooks as step_hooks
from gpubottle.probes import recorder as rec_mod
from gpubottle.probes import thread_sched

BLOCK, SKIP = 200, 400
PART = sys.argv[1]
gc.unfreeze()  # the launch froze its objects (launch/session.py): get_objects would not list them
_objects = gc.get_objects()
gc.freeze()
RECORDER = next(o for o in _objects if type(o) is rec_mod.Recorder)
HOOKS = [o for o in _objects if type(o) is step_hooks.StepHooks]
for _h in HOOKS:  # its own blocks without hooks (probes/unhooked.py) would be this one's noise
    if _h.off is not None:
        cast(Any, _h.off).enabled = False  # an Unhooked, behind the Blocks protocol
SCHEDS = [o for o in _objects if type(o) is thread_sched.ThreadSched]
del _objects
_saved: dict[str, Any] = {}


def _swap(owner: Any, name: str, off: bool) -> None:
    """Unwrap gpubottle's wrapper (functools.wraps keeps the original) while off."""
    cur = getattr(owner, name)
    if off and hasattr(cur, "__wrapped__"):
        _saved[name] = cur
        setattr(owner, name, cur.__wrapped__)
    elif not off and name in _saved:
        setattr(owner, name, _saved.pop(name))


def _empty(opt: Any, args: Any, kwargs: Any) -> None:
    return None


def set_off(off: bool) -> None:
    if PART == "all":
        RECORDER._closed = off
        RECORDER.hot_on = not off
    elif PART == "next":
        from torch.utils.data import dataloader

        _swap(dataloader._BaseDataLoaderIter, "__next__", off)
    elif PART == "backward":
        import torch.autograd

        _swap(torch.autograd, "backward", off)
    elif PART == "steps":
        for h in HOOKS:
            if off:
                h.on_step = lambda: None  # type: ignore[method-assign]
            else:
                h.__dict__.pop("on_step", None)
    elif PART == "fetch":
        for h in HOOKS:
            if off:
                _saved[f"fetchers{id(h)}"], h.fetchers = h.fetchers, []
            elif f"fetchers{id(h)}" in _saved:
                h.fetchers = _saved.pop(f"fetchers{id(h)}")
    elif PART == "sched":
        for s in SCHEDS:
            if off:
                s.now = lambda: (0.0, None)  # type: ignore[method-assign]
            else:
                s.__dict__.pop("now", None)
    elif PART == "opt":  # gpubottle's optimizer hooks made empty (torch iterates the dicts: no removal)
        for name in ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks"):
            hooks = getattr(optmod, name)
            if off:
                _saved[name] = {k: h for k, h in hooks.items() if h is not post}
                for k in _saved[name]:
                    hooks[k] = _empty
            elif name in _saved:
                hooks.update(_saved.pop(name))
    elif PART == "emit":
        if off:
            RECORDER.emit = lambda record: None  # type: ignore[method-assign]
        else:
            RECORDER.__dict__.pop("emit", None)
    else:
        raise SystemExit(f"unknown part {PART!r}")


state: dict[str, Any] = {"n": 0, "t": None, "c": None, "off": False, "on_s": [], "off_s": [], "on_c": [],
                         "off_c": []}


def post(opt: Any, args: Any, kwargs: Any) -> None:
    state["n"] += 1
    n = state["n"]
    if n < SKIP or n % BLOCK:
        return
    now, cpu = time.perf_counter(), time.thread_time()
    if state["t"] is not None:
        state["off_s" if state["off"] else "on_s"].append((now - state["t"]) / BLOCK)
        state["off_c" if state["off"] else "on_c"].append((cpu - state["c"]) / BLOCK)
    state["off"] = bool((n // BLOCK) % 2)
    set_off(state["off"])
    state["t"], state["c"] = time.perf_counter(), time.thread_time()


def _summary(on: list[float], off: list[float]) -> list[float]:
    diffs = sorted(a - b for a, b in zip(on, off))
    return [round(x * 1e6, 1) for x in (statistics.median(on), statistics.median(off),
                                        statistics.median(diffs), diffs[len(diffs) // 4],
                                        diffs[3 * len(diffs) // 4])]


def show() -> None:
    set_off(False)
    on, off = state["on_s"], state["off_s"]
    if not on or not off:
        print(f"in place, {PART}: too few blocks", file=sys.stderr)
        return
    us, cpu = _summary(on, off), _summary(state["on_c"], state["off_c"])
    print(f"in place, {PART}: {min(len(on), len(off))} pairs of {BLOCK}-step blocks: on {us[0]} us a step, "
          f"off {us[1]}; the part's cost {us[2]:+} us a step (quartiles {us[3]:+} .. {us[4]:+}); the "
          f"stepping thread's CPU {cpu[0]} and {cpu[1]} us a step: {cpu[2]:+} (quartiles {cpu[3]:+} .. "
          f"{cpu[4]:+})", file=sys.stderr)


optmod.register_optimizer_step_post_hook(post)
atexit.register(show)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
