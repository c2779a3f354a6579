"""The script's process, made while `gpubottle run` still reads its options (issue 32: its own start
is a cost of the run). `gpubottle run` forks itself at its first statement, once it has imported
what both processes need (the bootstrap's modules); the child imports the probes and waits. Where a
fork is not safe (another thread in this process: a test's) or not wanted (`spawn` from anywhere
but the command's entry), an interpreter is started instead, which imports the bootstrap itself.
On one core the fork is ~0.15 s of the script's CPU less before its `import torch` is done: no
second interpreter's start, and the supervisor's imports made once (measured 2026-12-01).

The waiting child blocks on a socket. `go()` sends it what the launch decided (its environment, its
working directory, its argv, and the pseudo-terminal's end where the live status needs one); the
child applies them and runs the bootstrap as a child started then would. Where the launch wants an
interpreter that starts differently (a changed PYTHON* or LD_* variable, read only at the start),
`go()` declines and the supervisor starts one as before. Closed without a `go` (--help, a usage
error, a missing script, gpubottle's own crash) the child sees end-of-file and leaves silently.
Ctrl-C before the launch is `gpubottle run`'s to answer (it ends, and the child leaves at the closed
socket): the child starts with SIGINT ignored and takes the launched script's signals at the
launch, so a press during its own start prints nothing (it printed Python's KeyboardInterrupt
traceback, or "Fatal Python error: init_import_site" during its site import).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Union

# Read by an interpreter or its loader only as it starts: a launch that changes one needs a new one.
_AT_START = ("PYTHON", "LD_", "MALLOC_", "GLIBC_TUNABLES", "LC_", "LANG")
OFF_ENV = "GPUBOTTLE_NO_PRESTART"  # set (any value): every run starts its interpreter after the parse

# Imported before a fork: most of them the supervisor imports too, and the child inherits them.
_SHARED = ("gpubottle.launch.bootstrap",)
# What the session imports as it opens and once torch is in, imported while waiting. None of them
# imports torch: the script may set its environment before torch reads it.
_PRELOAD = ("gpubottle.probes.cuda", "gpubottle.probes.device_clock", "gpubottle.probes.model_calls",
            "gpubottle.probes.leaks", "gpubottle.probes.knobs", "gpubottle.probes.install",
            "gpubottle.probes.torch_hooks")

WAIT = "from gpubottle.launch.prestart import wait; wait({fd})"


class Forked:
    """A child this process forked, with what the supervisor uses of Popen's interface (Popen
    cannot take a process it did not start). Reaped as Popen reaps: `poll` never blocks, and
    returns None while `wait` blocks in another thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): as Popen says
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def poll(self) -> int | None:
        if self.returncode is None and self._lock.acquire(False):
            try:
                if self.returncode is None:
                    self._reap(os.WNOHANG)
            finally:
                self._lock.release()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            with self._lock:
                while self.returncode is None:
                    self._reap(0)
            return self.returncode
        end, pause = time.monotonic() + timeout, 0.0005
        while (code := self.poll()) is None:
            if time.monotonic() > end:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return code

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


Child = Union["subprocess.Popen[bytes]", Forked]


class Waiting:
    """The waiting child: its process, our end of its socket, the environment it started with. (No
    dataclass: its import would delay the child's start by ~8 ms.)"""

    def __init__(self, popen: Child, sock: socket.socket, env: dict[str, str]) -> None:
        self.popen, self.sock, self.env = popen, sock, env

    def go(self, env: Mapping[str, str], args: list[str],
           out_fd: int | None) -> Child | None:
        """Start the bootstrap with `args` (its argv after `-c`), `env` and this working directory;
        `out_fd`: its stdout and stderr (the live status's pseudo-terminal), None to keep ours.
        None where it cannot (a start-time variable differs, or the child is gone): then it is
        ended, and the caller starts an interpreter itself."""
        if not compatible(self.env, env) or self.popen.poll() is not None:
            self.drop()
            return None
        import json

        message = json.dumps({"env": dict(env), "args": args, "cwd": os.getcwd()}).encode()
        try:
            socket.send_fds(self.sock, [b"o" if out_fd is not None else b"-"],
                            [out_fd] if out_fd is not None else [])
            self.sock.sendall(message)
            self.sock.close()
        except Exception:  # (an OS without fd passing too): fail open
            self.drop()
            return None
        return self.popen

    def drop(self) -> None:
        """End the waiting child (it leaves at the closed socket) and reap it."""
        try:
            self.sock.close()
            self.popen.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.popen.kill()
            self.popen.wait()


_waiting: Waiting | None = None


def compatible(started: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether an interpreter started with `started` serves a launch that wants `wanted`: every
    variable read only at an interpreter's start is the same in both."""
    keys = {k for k in (*started, *wanted) if k.startswith(_AT_START)}
    return all(started.get(k) == wanted.get(k) for k in keys)


def spawn(argv: list[str], fork: bool = False) -> None:
    """At `gpubottle run`'s first statement: start the waiting interpreter (fail open: without it
    the run starts one later, as it always could). `fork` (the command's entry only, whose callers
    are the interpreter's top): this process forked after the imports both need, so the script's
    process starts no interpreter of its own and imports them once (see `_fork`)."""
    global _waiting
    if _waiting is not None or argv[:1] != ["run"] or os.environ.get(OFF_ENV):
        return
    forking = fork and _can_fork()
    try:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        # SIGINT ignored in the child from its first instruction (the disposition is inherited;
        # Python then installs no handler of its own): ours for the ~0.2 ms of the spawn (a
        # preexec_fn would cost ~2 ms of fork instead).
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except Exception:
        return
    pid = _fork() if forking else None
    if pid == 0:  # the child, outside every try: what the script raises ends it as at the top
        from gpubottle.launch import tracebacks

        tracebacks.forked_from(getattr(sys.modules.get("__main__"), "__file__", None))
        ours.close()
        wait(theirs.detach())
        os._exit(0)  # (wait does not return)
    try:
        child: Child
        if pid is None:
            child = subprocess.Popen([sys.executable, "-c", WAIT.format(fd=theirs.fileno())],
                                     env=env, pass_fds=[theirs.fileno()])
        else:
            child = Forked(pid)
        theirs.close()
        _waiting = Waiting(child, ours, env)
    except Exception:
        _waiting = None
    finally:
        signal.signal(signal.SIGINT, old)


def _can_fork() -> bool:
    """Whether this process may fork for the waiting child, once it has imported what the child
    and the supervisor both import. Not where another thread runs: it could hold a lock the child
    would then wait on for ever."""
    threads = sys.modules.get("threading")
    if not hasattr(os, "fork") or (threads is not None and threads.active_count() > 1):
        return False
    try:
        import importlib

        for name in _SHARED:
            importlib.import_module(name)
    except Exception:
        return False
    return True


def _fork() -> int | None:
    """0 in the child, its pid here, None where the fork failed."""
    try:
        return os.fork()
    except OSError:
        return None


def take() -> Waiting | None:
    """The waiting child, once (None where none was started)."""
    global _waiting
    waiting, _waiting = _waiting, None
    return waiting


def wait(fd: int) -> None:
    """In the waiting child: the bootstrap imported, wait for the launch, then run as the bootstrap
    does. Leaves without a word at end-of-file (gpubottle run ended before a launch) or where its
    imports fail (the launch then starts an interpreter of its own, which says why). SIGINT is
    ignored until the launch (`spawn` starts it so): no KeyboardInterrupt can reach it here."""
    try:
        import importlib
        import json
        import time

        from gpubottle.launch import bootstrap  # the imports done while the options are read

        for name in _PRELOAD:  # and those the session makes later (none imports torch)
            try:
                importlib.import_module(name)
            except Exception:
                pass
        sock = socket.socket(fileno=fd)
        head, fds, _flags, _addr = socket.recv_fds(sock, 1, 1)
        chunks = []
        while head:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        sock.close()
        if not head:
            os._exit(0)
        order = json.loads(b"".join(chunks))
    except BaseException:  # nothing of the script's has run yet
        os._exit(0)
    began = time.monotonic()  # gpubottle's start in this process counts from the launch
    _signals_as_launched()
    for fd_out in fds:
        os.dup2(fd_out, 1)
        os.dup2(fd_out, 2)
        os.close(fd_out)
    os.environ.clear()
    os.environ.update(order["env"])
    if order["cwd"] != os.getcwd():
        os.chdir(order["cwd"])
    sys.argv = ["-c", *order["args"]]
    bootstrap.main(began)


def _signals_as_launched() -> None:
    """The signals as an interpreter started at the launch has them. That one was started after
    the supervisor took SIGINT, SIGTERM, SIGHUP and SIGQUIT to forward them, so it began with their
    defaults; this one began earlier, with whatever `gpubottle run` inherited: a shell's background
    job ignores SIGINT and SIGQUIT, and the script would then ignore the Ctrl-C forwarded to it."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
