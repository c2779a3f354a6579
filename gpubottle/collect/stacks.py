"""py-spy stack sampling of the script and its DataLoader workers, from outside the process.

py-spy writes its file only when a recording ends, so we record in chunks (15 s by default): each
chunk lands in the run directory as it completes, and a crash loses at most one chunk. Sampling is
non-blocking (the script is never paused) and includes idle threads, so the main thread's time spent
waiting for a batch is seen too. Where py-spy cannot attach (ptrace denied, not installed) the run goes
on and the reason is kept for the report.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from gpubottle.wire import StackChunk, encode

HOW_TO_ENABLE = (
    "allow ptrace: run as root, add --cap-add SYS_PTRACE to docker run, or set "
    "kernel.yama.ptrace_scope=0 (sysctl)"
)


def _lower_priority(pid: int) -> None:
    """py-spy yields the CPU to the training: on a machine where every core runs a compute thread,
    even a little stolen time stalls the others at their next barrier. (Set after the start, as
    preexec_fn is unsafe in a process with threads.)"""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, 10)
    except (OSError, AttributeError):
        pass


def find_py_spy() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("py-spy")


def ptrace_denied(pid: int) -> bool:
    """Opening /proc/PID/mem needs the same permission as ptrace: a direct test of why py-spy failed
    (with --subprocesses it says only that it found no Python process)."""
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def explain_failure(stderr: str, pid: int | None = None) -> str:
    low = stderr.lower()
    denied = "permission" in low or "ptrace" in low or "operation not permitted" in low
    if denied or (pid is not None and ptrace_denied(pid)):
        return f"py-spy was not allowed to read the process ({HOW_TO_ENABLE})"
    errors = [ln for ln in stderr.splitlines() if ln.startswith("Error")]
    return f"py-spy failed: {errors[0][:200] if errors else 'no output'}"


class StackSampler:
    def __init__(self, out_dir: str, rate: int = 20, chunk_s: float = 15.0, binary: str | None = None):
        self.out_dir = out_dir
        self.rate = rate
        self.chunk_s = chunk_s
        self.binary = binary if binary is not None else find_py_spy()
        self.ok: bool | None = None  # None until the first chunk says
        self.reason: str | None = None
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0
        self.chunks = 0

    def start(self, pid: int) -> None:
        if self.binary is None:
            self.ok, self.reason = False, "py-spy is not installed (pip install py-spy)"
            return
        os.makedirs(self.out_dir, exist_ok=True)
        self._pid = pid
        self._thread = threading.Thread(target=self._loop, name="gpubottle-stacks", daemon=True)
        self._thread.start()

    def _alive(self) -> bool:
        try:
            os.kill(self._pid, 0)
        except OSError:
            return False
        return True

    def _loop(self) -> None:
        # Let the interpreter start before attaching: py-spy cannot read a process still loading.
        if self._stop.wait(0.5):
            return
        retries = 3
        while not self._stop.is_set() and self._alive():
            path = os.path.join(self.out_dir, f"chunk-{self.chunks:04d}.speedscope.json")
            cmd = [
                str(self.binary), "record", "--pid", str(self._pid), "--subprocesses", "--idle",
                "--nonblocking", "--full-filenames", "--rate", str(self.rate),
                "--duration", str(max(1, round(self.chunk_s))), "--format", "speedscope", "--output", path,
            ]
            t0 = time.monotonic()
            try:
                self._proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                )
                _lower_priority(self._proc.pid)
                _, err = self._proc.communicate()
            except OSError as exc:
                self.ok, self.reason = False, f"py-spy could not start: {exc.strerror}"
                return
            t1 = time.monotonic()
            rc = self._proc.returncode
            if os.path.exists(path) and os.path.getsize(path) > 0:
                self.ok = True
                with open(os.path.join(self.out_dir, "chunks.jsonl"), "a") as fh:
                    fh.write(encode(StackChunk(os.path.basename(path), t0, t1, self.rate)) + "\n")
                self.chunks += 1
                continue
            if not self._alive() or self._stop.is_set():
                return
            retries -= 1
            text = err.decode("utf-8", "replace")
            if (rc != 0 and retries <= 0) or "permission" in text.lower() or ptrace_denied(self._pid):
                self.ok = bool(self.chunks)
                self.reason = explain_failure(text, self._pid)
                return
            self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGINT)  # py-spy writes what it has on Ctrl-C
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self.ok is None and self.reason is None:
            self.ok = False
            self.reason = "the script ended before py-spy could attach"

    def status(self) -> dict[str, object]:
        return {"ok": bool(self.ok), "reason": self.reason}
