"""Where the host waits on the GPU: torch's sync debug mode for a few steps, attributed to user code.

torch.cuda.set_sync_debug_mode("warn") makes every synchronising call (.item(), .cpu(), printing a
tensor, a blocking copy) issue a warning. While it is on, we take those warnings (and only those:
others are shown as usual), note the innermost user frame of each, and then restore the script's
own warning filters and display hook exactly as they were.
"""

from __future__ import annotations

import traceback
import warnings
from collections import Counter
from typing import Any

from gpubottle.probes.sites import is_user_file, short_path

_MARK = "synchroniz"  # "called a synchronizing CUDA operation"


class SyncSites:
    def __init__(self) -> None:
        self.sites: Counter[str] = Counter()
        self.active = False
        self._saved_show: Any = None
        self._saved_filters: Any = None

    def start(self) -> None:
        if self.active:
            return
        self._saved_show = warnings.showwarning
        self._saved_filters = list(warnings.filters)
        warnings.filterwarnings("always", message=f".*{_MARK}.*")
        saved = self._saved_show

        def showwarning(message: Any, category: Any, filename: str, lineno: int,
                        file: Any = None, line: Any = None) -> None:
            if _MARK not in str(message):
                saved(message, category, filename, lineno, file, line)
                return
            self.sites[self._site(filename, lineno)] += 1

        warnings.showwarning = showwarning
        self.active = True

    @staticmethod
    def _site(filename: str, lineno: int) -> str:
        if is_user_file(filename):
            return f"{short_path(filename)}:{lineno}"
        for frame in reversed(traceback.extract_stack()[:-2]):
            if is_user_file(frame.filename):
                return f"{short_path(frame.filename)}:{frame.lineno}"
        return f"{short_path(filename)}:{lineno}"

    def stop(self) -> None:
        if not self.active:
            return
        warnings.showwarning = self._saved_show
        warnings.filters[:] = self._saved_filters  # type: ignore[index]
        self.active = False
