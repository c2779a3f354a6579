"""The child: install the probes, then run the script as plain `python` would.

Started by the supervisor as `python -c "...bootstrap.main()" TARGET ARGS...` with its settings in the
GPUBOTTLE_CHILD environment variable (removed at once, so the script's own subprocesses are not
instrumented, except the ranks of a job: launch/ranks.py). runpy gives the script
`__name__ == "__main__"`, its own argv and a `__main__` module that spawn-started DataLoader workers
can re-import.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

from gpubottle.launch import ranks, tracebacks
from gpubottle.launch.job import OWN_DIRECTORY_LAUNCHERS
from gpubottle.launch.ranks import CHILD_ENV
from gpubottle.launch.session import BadTarget, run_session
from gpubottle.launch.spawn import patch_spawn
from gpubottle.options import ChildConfig

BAD_TARGET_EXIT = 3


def _run_target(cfg: ChildConfig, argv: list[str]) -> None:
    if cfg.module:
        name = cfg.module
        sys.argv = [name, *argv]
        sys.path[0] = os.getcwd()
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise BadTarget(f"no module named {name} (looked in {os.getcwd()} and sys.path)")
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    else:
        script = str(cfg.script)
        sys.argv = [script, *argv]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")


def main(began: float | None = None) -> None:
    cfg = ChildConfig.from_env(os.environ.pop(CHILD_ENV))
    argv = sys.argv[1:]
    if cfg.rank is None:
        ranks.prepare(cfg)  # this process may launch ranks (torchrun, mp.spawn)
    else:
        ranks.forget()
    # mp.spawn's processes are ranks: the launcher's torch gets its start_processes wrapped.
    also = {"ranks-spawn": patch_spawn} if cfg.rank is None else {}
    # A rank in a run directory of its own (a cluster's launcher started it) writes as a script does.
    own_dir = cfg.rank is not None and cfg.rank.get("launcher") in OWN_DIRECTORY_LAUNCHERS
    rank = "" if cfg.rank is None or own_dir else f"-rank{cfg.rank['rank']}"
    tracebacks.install(os.path.join(os.path.dirname(cfg.events), f"traceback{rank}.txt"))
    try:
        code = run_session(cfg, lambda: _run_target(cfg, argv), also, began)
    except BadTarget:
        sys.exit(BAD_TARGET_EXIT)
    # Stopped early on purpose: leave without running the rest of the script's teardown.
    sys.exit(code)
