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

import ctypes
import functools
import io
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any, Literal, TypeVar

from gpubottle.launch.watch import WATCH_FILE
from gpubottle.options import (
    DEFAULT_SAMPLE_HZ,
    DEFAULT_STACK_RATE,
    DEFAULT_WINDOW_START,
    DEFAULT_WINDOW_STEPS,
)

F = TypeVar("F", bound=Callable[..., Any])
PR_SET_PTRACER = 0x59616D61  # Yama: let this pid (and its children: py-spy) trace us


class _Session:
    """The probes of this process, installed by the first profile and re-targeted by the next."""

    def __init__(self) -> None:
        self.recorder: Any = None
        self.hooks: Any = None
        self.clock: Any = None

    def start(self, cfg: Any) -> None:
        from gpubottle.clock import StepClock
        from gpubottle.launch.session import open_session
        from gpubottle.probes.cuda import CudaProbe
        from gpubottle.probes.leaks import LeakProbe
        from gpubottle.wire import Start

        if self.recorder is None:
            self.clock = StepClock()
            self.recorder, self.hooks = open_session(cfg, clock=self.clock)
            return
        self.recorder.reopen(cfg.events, Start(os.getpid(), time.monotonic(), time.time()))
        self.clock.reset()
        if self.hooks is not None:  # per-use state: the step count, the profiler window, censuses
            self.hooks.steps = 0
            for probe in self.hooks.probes:
                if isinstance(probe, LeakProbe):
                    probe.__init__(self.recorder, cfg.census_request)  # type: ignore[misc]
                elif isinstance(probe, CudaProbe):
                    probe.__init__(self.recorder, self.hooks, cfg.window, None, probe.leaks)  # type: ignore[misc]
        self.recorder.flush()


_SESSION = _Session()


def _allow_tracing_by(pid: int) -> None:
    """Where Yama's ptrace_scope is 1 (Ubuntu's default) only ancestors may trace a process: the
    watcher is our child, so say it may (a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PTRACER, pid, 0, 0, 0)
    except Exception:
        pass


class Profile:
    """The context manager (and decorator) `gpubottle.profile()` returns."""

    def __init__(self, out: str | None = None, json: str | None = None, html: str | None = None,
                 stacks: bool = True, gpu: bool = True, name: str = "profile", show: bool = True,
                 stream: IO[str] | None = None, sample_hz: float = DEFAULT_SAMPLE_HZ,
                 stack_rate: int = DEFAULT_STACK_RATE) -> None:
        self.out, self.json_path, self.html_path = out, json, html
        self.stacks, self.gpu, self.name, self.show = stacks, gpu, name, show
        self.stream = stream
        self.sample_hz, self.stack_rate = sample_hz, stack_rate
        self.report: dict[str, Any] | None = None  # the report JSON, once the block has ended
        self.run_dir: str | None = None
        self.text: str | None = None  # the terminal report, as printed
        self._watcher: subprocess.Popen[str] | None = None
        self._meta: dict[str, Any] = {}
        self._rd: Any = None
        self._started = 0.0

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

    def __call__(self, fn: F) -> F:
        """As a decorator: each call of `fn` is profiled with these settings."""
        settings = dict(out=self.out, json=self.json_path, html=self.html_path, stacks=self.stacks,
                        gpu=self.gpu, name=getattr(fn, "__name__", self.name), show=self.show,
                        stream=self.stream, sample_hz=self.sample_hz, stack_rate=self.stack_rate)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with Profile(**settings):  # type: ignore[arg-type]
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

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
        from gpubottle.commands.run import machine_meta
        from gpubottle.options import ChildConfig, WindowConfig
        from gpubottle.rundir import new_run_dir

        rd = new_run_dir(self.name, self.out)
        self._rd, self.run_dir = rd, rd.path
        self.report = self.text = None
        self._meta = {
            "command": ["gpubottle.profile", self.name], "target": self.name, "module": None, "args": [],
            **machine_meta(1.0 / self.sample_hz), "in_process": True,
        }
        cmd = [sys.executable, "-m", "gpubottle.launch.watch", "--pid", str(os.getpid()),
               "--run-dir", os.path.abspath(rd.path), "--sample-hz", str(self.sample_hz),
               "--stack-rate", str(self.stack_rate)]
        cmd += [] if self.stacks else ["--no-stacks"]
        cmd += [] if self.gpu else ["--no-gpu"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")])}
        self._watcher = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         env=env, start_new_session=True)
        _allow_tracing_by(self._watcher.pid)
        window = WindowConfig(start=DEFAULT_WINDOW_START, steps=DEFAULT_WINDOW_STEPS,
                              path=os.path.abspath(rd.window_trace))
        cfg = ChildConfig(events=os.path.abspath(rd.events), window=window,
                          census_request=os.path.abspath(rd.census_request))
        self._started = time.monotonic()
        _SESSION.start(cfg)
        assert self._watcher.stdin is not None and self._watcher.stdout is not None
        self._watcher.stdin.write("go\n")
        self._watcher.stdin.flush()
        self._watcher.stdout.readline()  # "sampling": the collectors are running

    def _stop(self, exc: BaseException | None) -> None:
        from gpubottle.launch.session import finish_probes
        from gpubottle.probes.recorder import hook_cost
        from gpubottle.wire import End

        ended = time.monotonic()
        rec = _SESSION.recorder
        if rec is not None:
            finish_probes(rec, _SESSION.hooks, hook_cost(), exc)
            how = ("completed" if exc is None else "exit" if isinstance(exc, SystemExit) else "exception")
            rec.emit(End(how, None if exc is None else f"{type(exc).__name__}: {exc}"[:500], ended))
            rec.close()
        watch = self._stop_watcher()
        interrupted = isinstance(exc, KeyboardInterrupt)
        self._meta.update(
            child_pid=os.getpid(), exit_code=0 if exc is None else 1, signal=None,
            duration_s=round(ended - self._started, 3), started_mono=self._started, ended_mono=ended,
            sampler_errors=watch.get("sampler_errors", []), signals_received=[],
            collectors=watch.get("collectors", {}),
        )
        if interrupted:
            self._meta["stop_reason"] = "interrupted"
        self._rd.write_json(self._rd.meta, self._meta)
        self._report()

    def _stop_watcher(self) -> dict[str, Any]:
        w = self._watcher
        if w is None:
            return {}
        try:
            if w.stdin is not None:
                w.stdin.close()
            w.wait(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
        if w.stdout is not None:
            w.stdout.close()
        try:
            with open(os.path.join(self._rd.path, WATCH_FILE)) as fh:
                data: dict[str, Any] = json.load(fh)
            return data
        except (OSError, ValueError):
            return {"sampler_errors": [f"the watcher ended without its status (exit {w.returncode})"]}

    def _report(self) -> None:
        from gpubottle.analysis.ranks import run_parts
        from gpubottle.collect.events import read_events
        from gpubottle.commands.output import write_json
        from gpubottle.commands.run import save_report
        from gpubottle.render.terminal import render_terminal
        from gpubottle.rules.jobs import diagnose_run

        rd = self._rd
        events = read_events(rd.events)
        report = diagnose_run(run_parts(rd, events))
        save_report(rd, report, self.html_path, events)
        if self.json_path:
            write_json(report, self.json_path)
        self.report = report.to_contract()
        buf = io.StringIO()
        render_terminal(report, buf, width=80)
        self.text = buf.getvalue()
        if self.show:
            _show(self)


def _show(p: Profile) -> None:
    """In a notebook, the HTML report inline; elsewhere the terminal report on stderr."""
    shell = _ipython_kernel()
    if shell is not None and p.stream is None:
        from IPython.display import HTML, display

        html = p._repr_html_()
        if html is not None:
            display(HTML(html))  # type: ignore[no-untyped-call]
            return
    stream = p.stream or sys.stderr
    stream.write(p.text or "")
    stream.flush()


def _ipython_kernel() -> Any:
    """The running IPython kernel (a notebook's, with rich display), None in a terminal or script."""
    ipy = sys.modules.get("IPython")
    if ipy is None:
        return None
    try:
        shell = ipy.get_ipython()
    except Exception:
        return None
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def profile(out: str | None = None, json: str | None = None, html: str | None = None, stacks: bool = True,
            gpu: bool = True, name: str = "profile", show: bool = True, stream: IO[str] | None = None,
            sample_hz: float = DEFAULT_SAMPLE_HZ, stack_rate: int = DEFAULT_STACK_RATE) -> Profile:
    """Profile the code in a `with` block (or each call of a decorated function) in this process.

    out: the run directory (default gpubottle-runs/<name>-<time>); json, html: also write the report
    there; stacks: sample stacks with py-spy; gpu: sample NVML; show: print the report at the end (the
    HTML report inline in a notebook); stream: where to print it (default stderr)."""
    return Profile(out=out, json=json, html=html, stacks=stacks, gpu=gpu, name=name, show=show, stream=stream,
                   sample_hz=sample_hz, stack_rate=stack_rate)
