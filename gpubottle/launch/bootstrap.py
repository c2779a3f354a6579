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
import time
from collections.abc import Callable
from typing import Any

from gpubottle.clock import StepClock
from gpubottle.launch import ranks
from gpubottle.launch.ranks import CHILD_ENV
from gpubottle.options import ChildConfig
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper
from gpubottle.wire import End, Probes, RankStart, Start

BAD_TARGET_EXIT = 3


class BadTarget(Exception):
    """The module to run does not exist: a usage error, not the script's failure."""


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


def _open_session(cfg: ChildConfig) -> tuple[Recorder, Any]:
    """The recorder and the probes of one process: the script's, or one rank's."""
    recorder = Recorder(cfg.events, cfg.flush_interval)
    stopper = Stopper(recorder, StepClock(), cfg.steps, cfg.duration, agreed=cfg.stop_at)
    recorder.emit(Start(os.getpid(), time.monotonic(), time.time()))
    if cfg.rank is not None:
        recorder.emit(RankStart(**cfg.rank))
    _flush_on_os_exit(recorder)
    cuda = None
    try:
        from gpubottle.probes.cuda import CudaProbe
        from gpubottle.probes.install import install_when_torch_imported

        cuda = CudaProbe(recorder, cfg.window, cfg.snapshot)
        if cfg.census_request:
            from gpubottle.probes.leaks import LeakProbe

            cuda.leaks = LeakProbe(recorder, cfg.census_request)
        install_when_torch_imported(recorder, stopper, cuda, cfg.trial, launcher=cfg.rank is None)
    except Exception as exc:  # fail open: the script runs without probes
        recorder.emit(Probes({"torch": f"probe install failed: {exc!r}"}))
    recorder.flush()
    return recorder, cuda


def run_session(cfg: ChildConfig, body: Callable[[], object]) -> int:
    """Run `body` (the script, or a rank's function) with the probes; End says how it ended.

    Returns 0 when it completed or was stopped early; its exceptions (SystemExit too) propagate.
    """
    recorder, cuda = _open_session(cfg)

    def finish(exc: BaseException | None) -> None:
        if cuda is not None:
            try:
                cuda.finish(exc)
            except Exception:
                pass

    try:
        body()
    except BadTarget as bad:
        recorder.emit(End("bad-target", str(bad), time.monotonic()))
        recorder.close()
        raise
    except EarlyStop as stop:
        finish(None)
        recorder.emit(End("stopped", str(stop), time.monotonic()))
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


def main() -> None:
    cfg = ChildConfig.from_env(os.environ.pop(CHILD_ENV))
    argv = sys.argv[1:]
    if cfg.rank is None:
        ranks.prepare(cfg)  # this process may launch ranks (torchrun, mp.spawn)
    else:
        ranks.forget()
    try:
        code = run_session(cfg, lambda: _run_target(cfg, argv))
    except BadTarget:
        sys.exit(BAD_TARGET_EXIT)
    # Stopped early on purpose: leave without running the rest of the script's teardown.
    sys.exit(code)
