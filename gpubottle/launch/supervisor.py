"""The supervisor: start the script in an instrumented child Python, sample it, pass signals through.

The script's stdout, stderr and exit status are its own. Ctrl-C from a terminal reaches the child
directly (same process group), so it is not forwarded a second time; a SIGINT sent to gpubottle alone
(`kill -INT`), and SIGTERM/SIGHUP/SIGQUIT, are forwarded. Whatever way the child ends, the caller gets
an outcome to build a report from.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from types import FrameType

from gpubottle.collect.events import EventTail
from gpubottle.launch import prestart
from gpubottle.launch.collectors import Collectors
from gpubottle.launch.ranks import BOOT, CHILD_ENV
from gpubottle.launch.status import StatusTracker, status_line
from gpubottle.launch.terminal import PtyRelay
from gpubottle.options import ChildConfig
from gpubottle.rundir import RunDir

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@dataclass
class RunRequest:
    child: ChildConfig  # what the script's process is told (paths absolute)
    args: list[str]
    run_dir: RunDir
    collectors: Collectors  # started with the child's pid, stopped when it ends
    live_status: bool = True


@dataclass
class RunOutcome:
    returncode: int
    started_mono: float
    ended_mono: float
    child_pid: int
    signals_received: list[int] = field(default_factory=list)
    sampler_errors: list[str] = field(default_factory=list)
    sampler_ticks: int = 0
    duration_forced: bool = False


def _terminal_sent_it() -> bool:
    """Whether our process group is the terminal's foreground group (so Ctrl-C reached the child too)."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


class Supervisor:
    def __init__(self, req: RunRequest) -> None:
        self.req = req
        self.signals: list[int] = []
        self.child: prestart.Child | None = None
        self._sigints = 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        child = self.child
        if child is None or child.poll() is not None:
            return
        if signum == signal.SIGINT:
            self._sigints += 1
            if self._sigints >= 3:  # the user insists: stop the script for good
                child.kill()
                return
            if _terminal_sent_it():
                return
        try:
            os.kill(child.pid, signum)
        except OSError:
            pass

    def run(self) -> RunOutcome:
        req = self.req
        env = dict(os.environ)
        env[CHILD_ENV] = req.child.to_env()
        cmd = [sys.executable, "-c", BOOT, *req.args]
        relay = None
        if req.live_status and sys.stdout.isatty() and sys.stderr.isatty():
            try:
                relay = PtyRelay()
            except OSError:
                relay = None
        old_handlers = {s: signal.signal(s, self._on_signal) for s in _FORWARDED}
        started = time.monotonic()
        waiting = prestart.take()
        out = relay.slave if relay is not None else None  # None: ours, inherited
        try:
            if waiting is not None:  # started beside the options' parse: told what to run now
                self.child = waiting.go(env, req.args, out)
            if self.child is None:
                self.child = subprocess.Popen(cmd, env=env, stdout=out, stderr=out)
            if relay is not None:
                relay.start()
        except BaseException:
            for s, h in old_handlers.items():
                signal.signal(s, h)
            raise
        child = self.child
        collectors = req.collectors
        collectors.start(child.pid, started)
        tracker = StatusTracker()
        tail = EventTail(req.run_dir.events, tracker)
        forced = False
        # A blocking wait in its own thread: polling the child would wake this process dozens of
        # times a second, and every wakeup preempts a training thread (which, with OpenMP compute
        # threads on every core, stalls its partners too).
        done = threading.Event()

        def wait_for_child() -> None:
            child.wait()
            done.set()

        threading.Thread(target=wait_for_child, name="gpubottle-wait", daemon=True).start()
        # The collectors' own periodic work runs after the sampler's ticks (Collectors.watch): this
        # thread wakes only for the live status line, or once for --duration's grace period.
        grace = started + req.child.duration + 15.0 if req.child.duration else None
        try:
            while not done.wait(0.5 if relay is not None else
                                None if grace is None or forced else max(0.0, grace - time.monotonic())):
                now = time.monotonic()
                if relay is not None:
                    if tail.path == req.run_dir.events and os.path.exists(req.run_dir.rank_events(0)):
                        tail = EventTail(req.run_dir.rank_events(0), tracker)  # a job: rank 0's pace
                    tail.poll()
                    latest = collectors.sampler.latest if collectors.sampler is not None else {}
                    relay.show(status_line(tracker, latest, child.pid, started))
                # --duration normally stops at a step boundary inside the script; a script that never
                # reaches one (stuck in set-up) is interrupted after a grace period.
                if grace is not None and not forced and now > grace:
                    forced = True
                    os.kill(child.pid, signal.SIGINT)
        finally:
            ended = time.monotonic()
            collectors.stop()
            if relay is not None:
                relay.finish()
            for s, h in old_handlers.items():
                signal.signal(s, h)
        return RunOutcome(
            returncode=child.wait(),  # reaped: done is set
            started_mono=started,
            ended_mono=ended,
            child_pid=child.pid,
            signals_received=list(self.signals),
            sampler_errors=list(collectors.errors),
            sampler_ticks=collectors.ticks,
            duration_forced=forced,
        )
