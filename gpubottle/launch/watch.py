"""The supervisor of an in-process profile (`gpubottle.profile`, `%%gpubottle`): it samples a process
it did not start, the one that started it.

    python -m gpubottle.launch.watch --pid PID --run-dir DIR [--sample-hz HZ] [--stack-rate N]
                                     [--no-stacks] [--no-gpu]

The same collectors as `gpubottle run`'s supervisor (the process tree with its DataLoader workers,
py-spy, NVML, the leak watch), into the same run directory files. It starts sampling when it reads a
line on stdin (by then the profiled process has allowed it to trace it, where Yama asks for that),
and stops at the end of stdin: when the profile ends, or when the profiled process dies. Its own
process and py-spy, children of the profiled one, are left out of the run's tree. What the
collectors said is written to RUN_DIR/watch.json for the report. `Watcher` is the profiled
process's side of it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import subprocess
import sys
import threading
from typing import Any

from gpubottle.launch.collectors import Collectors
from gpubottle.options import DEFAULT_SAMPLE_HZ, DEFAULT_STACK_RATE
from gpubottle.rundir import RunDir

WATCH_FILE = "watch.json"
PR_SET_PTRACER = 0x59616D61  # Yama: let this pid (and its children: py-spy) trace us


def _allow_tracing_by(pid: int) -> None:
    """Where Yama's ptrace_scope is 1 (Ubuntu's default) only ancestors may trace a process: the
    watcher is our child, so say it may (a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PTRACER, pid, 0, 0, 0)
    except Exception:
        pass


class Watcher:
    """The profiled process's side: a watcher started on this process (`start`, then `go` once the
    probes are in place, which returns when the collectors run), and `stop`, which returns what its
    collectors said."""

    def __init__(self, run_dir: str, sample_hz: float, stack_rate: int, stacks: bool, gpu: bool) -> None:
        self.run_dir = os.path.abspath(run_dir)
        cmd = [sys.executable, "-m", "gpubottle.launch.watch", "--pid", str(os.getpid()),
               "--run-dir", self.run_dir, "--sample-hz", str(sample_hz), "--stack-rate", str(stack_rate)]
        cmd += [] if stacks else ["--no-stacks"]
        cmd += [] if gpu else ["--no-gpu"]
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, start_new_session=True)
        _allow_tracing_by(self.proc.pid)

    def go(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()  # "sampling": the collectors are running

    def stop(self) -> dict[str, Any]:
        w = self.proc
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
            with open(os.path.join(self.run_dir, WATCH_FILE)) as fh:
                data: dict[str, Any] = json.load(fh)
            return data
        except (OSError, ValueError):
            return {"sampler_errors": [f"the watcher ended without its status (exit {w.returncode})"]}


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m gpubottle.launch.watch", description=__doc__)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--sample-hz", type=float, default=DEFAULT_SAMPLE_HZ)
    ap.add_argument("--stack-rate", type=int, default=DEFAULT_STACK_RATE)
    ap.add_argument("--no-stacks", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    return ap.parse_args(argv)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _on_exit(pid: int, done: threading.Event) -> bool:
    """Set `done` when `pid` exits, from a thread blocked on its pidfd (Linux 5.3); False where
    there is none to open (the caller then polls)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return False

    def wait() -> None:
        try:
            select.select([fd], [], [])
        finally:
            os.close(fd)
            done.set()

    threading.Thread(target=wait, name="gpubottle-watch-pid", daemon=True).start()
    return True


def main(argv: list[str] | None = None) -> int:
    a = _args(sys.argv[1:] if argv is None else argv)
    rd = RunDir(a.run_dir)
    if not sys.stdin.readline():  # the profiled process went away before saying go
        return 0
    done = threading.Event()

    def until_eof() -> None:
        try:
            sys.stdin.read()
        finally:
            done.set()

    threading.Thread(target=until_eof, name="gpubottle-watch-stdin", daemon=True).start()
    # The profiled process's end, heard as it happens (its DataLoader workers may hold stdin open
    # after it): polling it would wake this process once a second beside the training.
    heard = _on_exit(a.pid, done)
    collectors = Collectors(rd, 1.0 / a.sample_hz, not a.no_stacks, a.stack_rate, not a.no_gpu,
                            off=("stacks=False", "gpu=False"))
    collectors.start(a.pid)
    print("sampling", flush=True)
    try:
        while not done.wait(None if heard else 1.0) and _alive(a.pid):
            pass  # (the collectors' own periodic work runs after the sampler's ticks)
    finally:
        collectors.stop()
        status = {
            "collectors": collectors.status(),
            "sampler_errors": list(collectors.errors),
            "sampler_ticks": collectors.ticks,
        }
        with open(os.path.join(rd.path, WATCH_FILE), "w") as fh:
            json.dump(status, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
