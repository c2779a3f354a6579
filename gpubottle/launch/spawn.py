"""mp.spawn's ranks: its children run no script (multiprocessing unpickles the function to call), so
torch.multiprocessing's start_processes is wrapped in the launcher: the function it sends is
`spawned_rank`, which opens the rank's probe session and calls the user's function inside it."""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any

from gpubottle.launch.ranks import RANKS_ENV, forget, rank_config
from gpubottle.launch.session import run_session


def spawned_rank(plan: dict[str, Any], fn: Any, index: int, *args: Any) -> None:
    """What an mp.spawn process runs instead of `fn`: fn(index, *args) inside the rank's session."""
    forget()
    world = plan.pop("_nprocs", None)
    cfg = rank_config(plan, index, index, world, "mp.spawn")
    run_session(cfg, lambda: fn(index, *args))


def patch_spawn(torch: Any) -> str | None:
    """Wrap torch.multiprocessing's start_processes (mp.spawn calls it) in the launcher; None when
    done, else why not."""
    raw = os.environ.get(RANKS_ENV)
    if not raw:
        return "no run to report to"
    module = sys.modules.get("torch.multiprocessing.spawn")
    original = getattr(module, "start_processes", None)
    if module is None or original is None:
        return "torch.multiprocessing.spawn.start_processes not found"
    plan = json.loads(raw)
    plan.pop("launcher", None)
    plan.pop("inherited", None)

    @functools.wraps(original)
    def start_processes(fn: Any, args: tuple[Any, ...] = (), nprocs: int = 1, *rest: Any,
                        **kwargs: Any) -> Any:
        try:
            wrapped = functools.partial(spawned_rank, {**plan, "_nprocs": nprocs}, fn)
        except Exception:  # fail open
            wrapped = fn
        return original(wrapped, args, nprocs, *rest, **kwargs)

    module.start_processes = start_processes  # type: ignore[attr-defined]
    mp = getattr(torch, "multiprocessing", None)
    if mp is not None and getattr(mp, "start_processes", None) is original:
        mp.start_processes = start_processes
    return None
