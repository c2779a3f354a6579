"""The live status line, kept apart from the script's own output.

On a terminal the script writes into a pseudo-terminal (so it still sees a tty: line buffering, tqdm and
colours behave as usual) and we copy its output through, erasing the status line first and redrawing it
only when the script's output sits at the start of a line. Off a terminal nothing is relayed: the script
inherits our stdout and stderr as they are, and no status is drawn.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import termios
import threading
from types import FrameType

_CLEAR = b"\r\x1b[K"


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[n:]


def terminal_width(fd: int = 2) -> int:
    try:
        return os.get_terminal_size(fd).columns or 80  # 0 when the terminal never said
    except OSError:
        return 80


class PtyRelay:
    def __init__(self, out_fd: int = 1) -> None:
        self.out_fd = out_fd
        self.master, self.slave = pty.openpty()
        try:  # the real terminal already turns \n into \r\n: the inner one must not do it again
            attrs = termios.tcgetattr(self.slave)
            attrs[1] &= ~termios.OPOST
            termios.tcsetattr(self.slave, termios.TCSANOW, attrs)
        except termios.error:
            pass
        self._copy_size()
        self._lock = threading.Lock()
        self._at_line_start = True
        self._status_shown = False
        self._thread = threading.Thread(target=self._pump, name="gpubottle-relay", daemon=True)
        self._old_winch = None

    def _copy_size(self) -> None:
        try:
            size = fcntl.ioctl(self.out_fd, termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(self.slave, termios.TIOCSWINSZ, size)
        except OSError:
            pass

    def _on_winch(self, signum: int, frame: FrameType | None) -> None:
        self._copy_size()

    def start(self) -> None:
        """Call after the child has been started with `slave` as its stdout and stderr."""
        os.close(self.slave)
        try:
            self._old_winch = signal.signal(signal.SIGWINCH, self._on_winch)  # type: ignore[assignment]
        except ValueError:
            pass
        self._thread.start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except InterruptedError:
                continue
            except OSError:  # EIO: every writer (the script and its workers) closed the terminal
                break
            if not data:
                break
            with self._lock:
                if self._status_shown:
                    _write_all(self.out_fd, _CLEAR)
                    self._status_shown = False
                _write_all(self.out_fd, data)
                self._at_line_start = data.endswith(b"\n")

    def show(self, text: str) -> None:
        with self._lock:
            if not self._at_line_start:
                return
            width = terminal_width(self.out_fd)
            _write_all(self.out_fd, _CLEAR + text[: max(10, width - 1)].encode("utf-8", "replace"))
            self._status_shown = True

    def finish(self, timeout: float = 2.0) -> None:
        self._thread.join(timeout)
        with self._lock:
            if self._status_shown:
                _write_all(self.out_fd, _CLEAR)
                self._status_shown = False
            elif not self._at_line_start:
                _write_all(self.out_fd, b"\r\n")
        try:
            os.close(self.master)
        except OSError:
            pass
        if self._old_winch is not None:
            try:
                signal.signal(signal.SIGWINCH, self._old_winch)
            except ValueError:
                pass
