"""Where the host waits on the GPU, for a few steps, attributed to user code.

torch.cuda.set_sync_debug_mode("warn") makes the synchronising copies and stream syncs (.item(),
.cpu(), printing a tensor, a blocking copy) issue a warning. While it is on, we take those warnings
(and only those: others are shown as usual), note the innermost user frame of each, and then restore
the script's own warning filters and display hook exactly as they were. torch.cuda.synchronize() and
Event.synchronize() never warn (they call cudaDeviceSynchronize / cudaEventSynchronize directly), so
for the same steps those entry points are wrapped and their calling user line counted too. A script
that bound `synchronize` to another name before the window (`from torch.cuda import synchronize`)
is not seen there. Each site keeps the first library call under it that synchronised (what to
change: `.item()` in the user's line, or an optimizer's internals); syncs made by gpubottle's own
step-boundary probes (`quiet()` true) are not the script's and are not counted.
"""

from __future__ import annotations

import functools
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

from gpubottle.probes.sites import caller_site, is_user_file, place

_MARK = "synchroniz"  # "called a synchronizing CUDA operation"


class SyncSites:
    def __init__(self, quiet: Callable[[], bool] = lambda: False) -> None:
        self.sites: Counter[str] = Counter()
        self.calls: dict[str, str] = {}  # site -> the library call under it that synchronised
        self.functions: dict[str, str] = {}  # site -> the user function it is in
        self.quiet = quiet
        self.active = False
        self._saved_show: Any = None
        self._saved_filters: Any = None
        self._patched: list[tuple[Any, str, Any, bool]] = []  # owner, name, original, own attribute

    def start(self, torch: Any = None) -> None:
        if self.active:
            return
        if torch is not None:
            self._wrap(torch)
        self._saved_show = warnings.showwarning
        self._saved_filters = list(warnings.filters)
        warnings.filterwarnings("always", message=f".*{_MARK}.*")
        saved = self._saved_show

        def showwarning(message: Any, category: Any, filename: str, lineno: int,
                        file: Any = None, line: Any = None) -> None:
            try:
                ours = _MARK in str(message)
                if ours and not self.quiet():
                    site, function = self._site(filename, lineno)
                    self._count(site, None if is_user_file(filename) else place(filename, lineno),
                                function)
            except Exception:  # counting must never surface in the script's .item()
                ours = False
            if not ours:
                saved(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
        self.active = True

    def _count(self, site: str, call: str | None, function: str | None = None) -> None:
        self.sites[site] += 1
        if call is not None:
            self.calls.setdefault(site, call)
        if function is not None:
            self.functions.setdefault(site, function)

    @staticmethod
    def _site(filename: str, lineno: int) -> tuple[str, str | None]:
        """The user's line that synchronised, and the function it is in."""
        stack = traceback.extract_stack()[:-2]
        if is_user_file(filename):
            inner = next((f for f in reversed(stack) if f.filename == filename and f.lineno == lineno), None)
            return place(filename, lineno), inner.name if inner is not None else None
        for frame in reversed(stack):
            if is_user_file(frame.filename):
                return place(frame.filename, frame.lineno or 0), frame.name
        return place(filename, lineno), None

    def _wrap(self, torch: Any) -> None:
        cuda = getattr(torch, "cuda", None)
        event = getattr(cuda, "Event", None)
        for owner, name in ((cuda, "synchronize"), (event, "synchronize")):
            if owner is None:
                continue
            own = isinstance(owner, type) and name in owner.__dict__
            orig = owner.__dict__[name] if own else getattr(owner, name, None)
            if orig is None:
                continue

            call = f"torch.cuda.{'Event.' if owner is event else ''}synchronize()"

            @functools.wraps(orig)
            def counted(*args: Any, _orig: Any = orig, _call: str = call, **kwargs: Any) -> Any:
                try:
                    if not self.quiet():
                        self._count(caller_site(sys._getframe(1)) or "unknown", _call)
                except Exception:
                    pass  # counting must never break the script's call
                return _orig(*args, **kwargs)

            setattr(owner, name, counted)
            self._patched.append((owner, name, orig, own or not isinstance(owner, type)))

    def _unwrap(self) -> None:
        for owner, name, orig, own in reversed(self._patched):
            try:
                if own:
                    setattr(owner, name, orig)
                else:
                    delattr(owner, name)  # it was inherited: the base class's again
            except Exception:
                pass
        self._patched.clear()

    def stop(self) -> None:
        self._unwrap()
        if not self.active:
            return
        warnings.showwarning = self._saved_show
        warnings.filters[:] = self._saved_filters  # type: ignore[index]
        self.active = False
