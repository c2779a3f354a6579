"""The script's garbage collections as gpubottle sees them, and the one it moves.

gpubottle's own objects shift where the script's collections fall: a torch script's imports run a
full collection every eleventh gen-1 one, and under `gpubottle run` the last of them can land so
that gen 2 is due as the loop starts (gc.get_count() at benchmarks/heavy_memory.py's first step:
(669, 7, 10) under gpubottle, (101, 2, 2) under plain python). The loop's next collections then
make a full one of torch's objects and the kept tensors, at a moment no one chose: 176-204 ms in
the steady steps. A due one is run at the first step instead, where it is cheapest (the heap only
grows) and gpubottle's account carries it.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

Now = Callable[[], float]

# A full collection the script's last one shows dearer than this is left where it falls: it is
# the script's own heap's (a dataset of Python objects), one more would cost the run more than
# the steady steps gain. A torch process's ~300,000 objects: 87-146 ms here.
EARLY_GC_MAX_S = 0.25


class GcWatch:
    """A gc callback for the recorder's life: the CPU the collections took in the thread flushing
    now (`flushing`), when a collection last ended outside a flush, and how long the last full one
    outside a flush took."""

    def __init__(self, now: Now) -> None:
        self._now = now
        self.flushing: int | None = None
        self.in_flush_cpu_s = 0.0
        self.last = now()
        self.full_s = 0.0
        self._t0: float | None = None
        self._full_t0: float | None = None

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != self.flushing:
            if phase == "stop":
                self.last = self._now()
                if self._full_t0 is not None:
                    self.full_s, self._full_t0 = self.last - self._full_t0, None
            elif info.get("generation") == 2:
                self._full_t0 = self._now()
        elif phase == "start":
            self._t0 = time.thread_time()
        elif self._t0 is not None:
            self.in_flush_cpu_s += time.thread_time() - self._t0
            self._t0 = None


def collect_if_due(watch: GcWatch) -> float:
    """At the script's first step: a full collection now where the script's next ones would make
    one (gen 2's count at its threshold) and its last full one was cheap. Returns the seconds it
    took (0 where none ran). A script that turned collection off is left so."""
    try:
        _, _, full_after = gc.get_threshold()
        if not gc.isenabled() or gc.get_count()[2] < full_after or watch.full_s > EARLY_GC_MAX_S:
            return 0.0
        t0 = time.perf_counter()
        gc.collect()
        return time.perf_counter() - t0
    except Exception:
        return 0.0
