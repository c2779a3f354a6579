"""The ranks of a multi-process job get the probes too: torchrun's workers and mp.spawn's processes.

torchrun starts each worker as `python -u train.py ARGS` with RANK, LOCAL_RANK and WORLD_SIZE in its
environment; no argument of ours reaches it. So the launcher (the script's process, under the
bootstrap) puts gpubottle/launch/site first on PYTHONPATH: its sitecustomize runs at the start of
every Python below, and in a direct child of the launcher that has RANK set it calls `exec_rank`,
which re-executes the same interpreter with the same flags and arguments through the bootstrap,
with that rank's settings. exec keeps the pid, so the launcher's handle on its worker still holds.

mp.spawn's children run no script: launch/spawn.py wraps the function they are sent.

Each rank writes events-rank{R}.jsonl (and its own profiler window) into the run directory.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import asdict, replace
from typing import Any

from gpubottle.options import ChildConfig
from gpubottle.rundir import RunDir, int_env

RANKS_ENV = "GPUBOTTLE_RANKS"
# How the bootstrap is started and given its settings (the supervisor does it too). Written here, not
# in bootstrap.py: a rank reads them before it is re-executed, and importing the bootstrap there would
# cost every rank its imports twice.
CHILD_ENV = "GPUBOTTLE_CHILD"
# The time first, before any import of ours: gpubottle's start in the script's process is its cost.
BOOT = "import time; began = time.monotonic(); from gpubottle.launch.bootstrap import main; main(began)"
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")


# What tells a launcher's child that it is a new rank, not a process the script started that inherits
# the script's own environment (a script that is itself one rank of a Slurm job has RANK set).
_RANK_VARS = ("RANK", "LOCAL_RANK", "TORCHELASTIC_RUN_ID")


def prepare(cfg: ChildConfig) -> None:
    """In the launcher: leave the settings where rank processes below will look for them."""
    plan = asdict(cfg)
    plan["launcher"] = os.getpid()
    plan["inherited"] = {k: os.environ.get(k) for k in _RANK_VARS}
    os.environ[RANKS_ENV] = json.dumps(plan)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = SITE_DIR + (os.pathsep + old if old else "")


def forget() -> None:
    """In a rank: nothing below it is a rank of this job."""
    os.environ.pop(RANKS_ENV, None)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE_DIR]
    if parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        os.environ.pop("PYTHONPATH", None)


def _run_id() -> str | None:
    """torchrun's run id, which every rank of one job shares ("none": a static rendezvous that
    named none; a standalone job's is random, one machine's)."""
    run = os.environ.get("TORCHELASTIC_RUN_ID")
    return run if run and run != "none" else None


def rank_config(plan: dict[str, Any], rank: int, local_rank: int | None, world_size: int | None,
                launcher: str) -> ChildConfig:
    """The launcher's settings, with this rank's own files."""
    base = ChildConfig.from_env(json.dumps(plan))
    rd = RunDir(os.path.dirname(base.events))
    window = replace(base.window, path=rd.rank_window(rank)) if base.window is not None else None
    snapshot = (os.path.join(rd.path, f"cuda-memory-snapshot-rank{rank}.pickle")
                if base.snapshot else None)
    node = socket.gethostname()
    group = os.environ.get("GROUP_RANK")
    if group not in (None, "0"):
        node = f"{node}/node{group}"
    return replace(
        base, events=rd.rank_events(rank), window=window, snapshot=snapshot, census_request=None,
        rank={"rank": rank, "local_rank": local_rank, "world_size": world_size, "node": node,
              "launcher": launcher, "job": _run_id()},
        stop_at=rd.stop_at if base.duration else None,
    )


def _target(argv: list[str], orig: list[str]) -> tuple[list[str], str | None, str | None]:
    """(interpreter flags, script, module) of this process's command line, as sitecustomize sees it
    (sys.argv is [script, *args] or ['-m', *args] there; sys.orig_argv is the whole command)."""
    head = orig[1:len(orig) - len(argv) + (1 if argv[:1] == ["-m"] else 0)]
    if argv[:1] == ["-m"]:
        if head and head[-1].startswith("-m") and len(head[-1]) > 2:
            return head[:-1], None, head[-1][2:]
        if len(head) >= 2 and head[-2] == "-m":
            return head[:-2], None, head[-1]
        raise ValueError(f"cannot tell the module from {orig!r}")
    if not argv or argv[0] in ("-c", "-", ""):
        raise ValueError("the rank runs no script file")
    return head, os.path.abspath(argv[0]), None


def is_new_rank(plan: dict[str, Any], env: dict[str, str] | os._Environ[str], ppid: int) -> bool:
    """A direct child of the launcher whose rank variables the launcher set, not inherited."""
    if ppid != int(plan.get("launcher", -1)) or env.get("RANK") is None:
        return False
    inherited = plan.get("inherited") or {}
    return any(env.get(k) != inherited.get(k) for k in _RANK_VARS)


def exec_rank() -> None:
    """In a rank torchrun started: become `python FLAGS -c BOOT ARGS` with the rank's settings."""
    plan = json.loads(os.environ[RANKS_ENV])
    if not is_new_rank(plan, os.environ, os.getppid()):
        return  # a process the script started some other way: not a rank of this job
    rank = int_env("RANK")
    if rank is None:
        return
    flags, script, module = _target(list(sys.argv), list(sys.orig_argv))
    plan.update(script=script, module=module)
    cfg = rank_config(plan, rank, int_env("LOCAL_RANK"), int_env("WORLD_SIZE"), "torchrun")
    os.environ[CHILD_ENV] = cfg.to_env()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *flags, "-c", BOOT, *sys.argv[1:]])
