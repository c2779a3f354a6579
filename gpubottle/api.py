"""`gpubottle.profile()`: profile a block of code in the running process, where `gpubottle run` cannot
wrap it (a notebook cell, a framework's entry point, a test).

    with gpubottle.profile() as p:
        train(model, loader)
    p.report["primary"]          # the same JSON as `gpubottle run --json`
    p.run_dir                    # `gpubottle report` and `gate` read it

The probes are installed in this process (once: a second use re-targets them, torch may already be
imported) and a watcher process (launch/watch.py) samples this process, its DataLoader workers, py-spy
and NVML from outside, as `run`'s supervisor does. On exit the run directory and the report are
written and shown. The block's exceptions propagate unchanged (a KeyboardInterrupt still ends in a
report); a failure of gpubottle itself is a warning, never an exception in the user's code.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import time
import warnings
from collections.abc import Callable
from types import TracebackType
from typing import IO, TYPE_CHECKING, Literal

from gpubottle.options import DEFAULT_SAMPLE_HZ, DEFAULT_STACK_RATE, ProfileOptions

if TYPE_CHECKING:  # imported on first use: `import gpubottle` stays cheap for the command line
    from typing import ParamSpec, TypeVar

    from gpubottle.commands.meta import RunMeta
    from gpubottle.launch.watch import Watcher
    from gpubottle.rundir import RunDir

    P = ParamSpec("P")
    R = TypeVar("R")


class Profile:
    """The context manager (and decorator) `gpubottle.profile()` returns."""

    def __init__(self, opts: ProfileOptions) -> None:
        self.opts = opts
        self.report: dict[str, object] | None = None  # the report JSON, once the block has ended
        self.run_dir: str | None = None
        self.text: str | None = None  # the terminal report, as printed
        self._watcher: Watcher | None = None
        self._meta: RunMeta | None = None
        self._rd: RunDir | None = None

    # -- the block ---------------------------------------------------------------------------

    def __enter__(self) -> Profile:
        try:
            self._start()
        except Exception as exc:  # gpubottle's own failure: the block runs unprofiled
            warnings.warn(f"gpubottle: could not start profiling ({exc!r}); the code runs as usual",
                          RuntimeWarning, stacklevel=2)
            self._rd = None
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if self._rd is not None:
            try:
                self._stop(exc)
            except Exception as err:
                warnings.warn(f"gpubottle: could not build the report ({err!r}); the raw data is in "
                              f"{self.run_dir}", RuntimeWarning, stacklevel=2)
        return False  # the block's exception, KeyboardInterrupt included, goes on unchanged

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        """As a decorator: each call of `fn` is profiled with these settings."""
        opts = dataclasses.replace(self.opts, name=getattr(fn, "__name__", self.opts.name))

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            with Profile(opts):
                return fn(*args, **kwargs)

        return wrapper

    def _repr_html_(self) -> str | None:
        """In a notebook, the object shows as the HTML report."""
        if self.run_dir is None:
            return None
        try:
            with open(os.path.join(self.run_dir, "index.html")) as fh:
                return fh.read()
        except OSError:
            return None

    # -- start and stop ------------------------------------------------------------------------

    def _start(self) -> None:
        from gpubottle.commands.meta import RunMeta
        from gpubottle.launch.session import SESSION
        from gpubottle.launch.watch import Watcher
        from gpubottle.options import ChildConfig, WindowConfig
        from gpubottle.rundir import new_run_dir

        o = self.opts
        rd = new_run_dir(o.name, o.out)
        self._rd, self.run_dir = rd, rd.path
        self.report = self.text = None
        self._meta = RunMeta.here(["gpubottle.profile", o.name], o.name, 1.0 / o.sample_hz, in_process=True)
        self._watcher = Watcher(rd.path, o.sample_hz, o.stack_rate, o.stacks, o.gpu)
        cfg = ChildConfig(events=os.path.abspath(rd.events),
                          window=WindowConfig(path=os.path.abspath(rd.window_trace)),
                          census_request=os.path.abspath(rd.census_request))
        self._meta.started_mono = time.monotonic()
        SESSION.start(cfg)
        self._watcher.go()

    def _stop(self, exc: BaseException | None) -> None:
        from gpubottle.commands.finish import finish_run
        from gpubottle.commands.output import show, write_json
        from gpubottle.launch.session import SESSION, finish_probes
        from gpubottle.probes.recorder import emit_cost
        from gpubottle.probes.sites import notebook_cells
        from gpubottle.render.terminal import render_terminal
        from gpubottle.wire import End

        ended = time.monotonic()
        rec = SESSION.recorder
        if rec is not None:
            finish_probes(rec, SESSION.hooks, emit_cost(), exc)
            how = ("completed" if exc is None else "exit" if isinstance(exc, SystemExit) else "exception")
            rec.emit(End(how, None if exc is None else f"{type(exc).__name__}: {exc}"[:500], ended))
            rec.close()
        watch = self._watcher.stop() if self._watcher is not None else {}
        meta, rd = self._meta, self._rd
        assert meta is not None and rd is not None
        meta.ended(os.getpid(), 0 if exc is None else 1, meta.started_mono or ended, ended,
                   "interrupted" if isinstance(exc, KeyboardInterrupt) else None)
        meta.sampler_errors = list(watch.get("sampler_errors", []))
        meta.collectors = dict(watch.get("collectors", {}))
        meta.cells = notebook_cells()
        report = finish_run(rd, meta, self.opts.html)
        if self.opts.json:
            write_json(report, self.opts.json)
        self.report = report.to_contract()
        buf = io.StringIO()
        render_terminal(report, buf, width=80)
        self.text = buf.getvalue()
        if self.opts.show:
            show(self.text, self._repr_html_(), self.opts.stream)


def profile(out: str | None = None, json: str | None = None, html: str | None = None, stacks: bool = True,
            gpu: bool = True, name: str = "profile", show: bool = True, stream: IO[str] | None = None,
            sample_hz: float = DEFAULT_SAMPLE_HZ, stack_rate: int = DEFAULT_STACK_RATE) -> Profile:
    """Profile the code in a `with` block (or each call of a decorated function) in this process.

    out: the run directory (default gpubottle-runs/<name>-<time>); json, html: also write the report
    there; stacks: sample stacks with py-spy; gpu: sample NVML; show: print the report at the end (the
    HTML report inline in a notebook); stream: where to print it (default stderr)."""
    return Profile(ProfileOptions(**locals()))
