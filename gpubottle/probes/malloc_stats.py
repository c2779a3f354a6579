"""What C's allocator (glibc's malloc) holds, read at each tensor census.

Memory the script frees goes back to malloc, not always to the system: glibc serves blocks under
its mmap threshold (which rises, up to 32 MiB, each time a larger mapped block is freed) from a
heap it can only shrink at its top. A loop that frees a step's large tensors while it keeps a few
small arrays or tensors each step (a replay buffer's frames, a list of predictions) leaves each
kept block inside a freed span, and the next step's tensors no longer fit there: the heap grows by
about a step's tensors each step, nearly all of it free (measured: a DQN keeping 28 KB frames grew
3.5 MB a step; with jemalloc 0.05). mallinfo2 says how much of the heap is free and how much in
use, summed over every arena; glibc only (mallinfo2 from 2.33, mallinfo before), None elsewhere.
"""

from __future__ import annotations

import ctypes
from typing import Any

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
           "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


class _MallInfo(ctypes.Structure):
    # glibc before 2.33 (Ubuntu 20.04's 2.31, many clusters' images) has only mallinfo, whose
    # fields are C ints: read unsigned they are the true values modulo 2**32, and the growth
    # between two censuses (under 4 GiB) is still right taken modulo 2**32.
    _fields_ = [(name, ctypes.c_uint) for name in _FIELDS]


_call: Any = None
_wraps = 0
_looked = False


def _mallinfo() -> Any:
    global _call, _wraps, _looked
    if not _looked:
        _looked = True
        _call = _find("mallinfo2", _MallInfo2)
        if _call is None:
            _call, _wraps = _find("mallinfo", _MallInfo), 1
    return _call


def _find(name: str, struct: Any) -> Any:
    try:
        fn = getattr(ctypes.CDLL(None), name)  # the process's own symbols: glibc's, or none
    except (OSError, AttributeError):
        return None
    fn.restype = struct
    fn.argtypes = []
    return fn


def heap_stats() -> list[int] | None:
    """[heap bytes (arenas), mapped bytes (blocks malloc mapped on their own), bytes in use in
    the arenas, free bytes the arenas hold, 1 where those are modulo 2**32 (mallinfo) else 0], or
    None where the C library has neither mallinfo2 nor mallinfo."""
    fn = _mallinfo()
    if fn is None:
        return None
    try:
        m = fn()
    except Exception:
        return None
    return [int(m.arena), int(m.hblkhd), int(m.uordblks), int(m.fordblks), _wraps]
