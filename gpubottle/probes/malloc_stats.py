"""What C's allocator (glibc's malloc) holds, read at each tensor census.

Memory the script frees goes back to malloc, not always to the system: glibc serves blocks under
its mmap threshold (which rises, up to 32 MiB, each time a larger mapped block is freed) from a
heap it can only shrink at its top. A loop that frees a step's large tensors while it keeps a few
small arrays or tensors each step (a replay buffer's frames, a list of predictions) leaves each
kept block inside a freed span, and the next step's tensors no longer fit there: the heap grows by
about a step's tensors each step, nearly all of it free (measured: a DQN keeping 28 KB frames grew
3.5 MB a step; with jemalloc 0.05). mallinfo2 says how much of the heap is free and how much in
use, summed over every arena; glibc only (2.33+), None elsewhere.
"""

from __future__ import annotations

import ctypes
from typing import Any

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
           "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


_call: Any = None
_looked = False


def _mallinfo2() -> Any:
    global _call, _looked
    if not _looked:
        _looked = True
        try:
            fn = ctypes.CDLL(None).mallinfo2  # the process's own symbols: glibc's, or none
            fn.restype = _MallInfo2
            fn.argtypes = []
            _call = fn
        except (OSError, AttributeError):
            _call = None
    return _call


def heap_stats() -> list[int] | None:
    """[heap bytes (arenas), mapped bytes (blocks malloc mapped on their own), bytes in use in
    the arenas, free bytes the arenas hold], or None where the C library has no mallinfo2."""
    fn = _mallinfo2()
    if fn is None:
        return None
    try:
        m = fn()
    except Exception:
        return None
    return [int(m.arena), int(m.hblkhd), int(m.uordblks), int(m.fordblks)]
