"""Bounded buffers the script is filling: a collections.deque with a maxlen (a replay buffer, a
window of recent transitions) grows until it is full, then drops its oldest item for each it adds,
so the memory it drives levels off there. The leak census finds them in its walk over the heap
(contents.heap_tensors_and_modules) and measures what an item holds: the supervisor's growth line,
fitted over a short run, is then not projected past the buffer's bound (a DQN's deque(maxlen=200000)
of small transitions, 12 s in: "runs out in about 30 min"; its memory levels off at 475 MB).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from gpubottle.probes.contents import storage_of

# A deque drives memory with this many items, or items holding MIN_BYTES together; shorter ones
# are windows of recent values (a DQN's small transitions drive more than their own bytes: a
# step's freed tensors around them, measured 20 KB of memory a 300-byte transition).
MIN_ITEMS = 1000
MIN_BYTES = 8 << 20
FEWEST = 100
SAMPLE = 16  # the newest items, measured
MAX_BUFFERS = 2  # named (each name is a scan of the heap)
DEPTH = 3  # containers followed inside an item (a tuple of arrays; a dict of tensors)


def _size(obj: Any, seen: set[int], depth: int) -> int:
    """Bytes `obj` holds, each object once: a numpy array's size includes the data it owns; a
    tensor's storage is counted once however many views share it."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    try:
        n = sys.getsizeof(obj)
    except Exception:
        n = 0
    st = storage_of(obj) if hasattr(obj, "untyped_storage") else None
    if st is not None:
        if st[0] in seen:
            return n
        seen.add(st[0])
        return n + st[1]
    if depth <= 0:
        return n
    if isinstance(obj, (tuple, list, set, frozenset)):
        return n + sum(_size(x, seen, depth - 1) for x in obj)
    if isinstance(obj, dict):
        return n + sum(_size(k, seen, depth - 1) + _size(v, seen, depth - 1) for k, v in obj.items())
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and not isinstance(obj, type):
        return n + _size(d, seen, depth - 1)
    return n


def item_bytes(buffer: Any) -> int:
    """The mean bytes of the newest SAMPLE items, an object shared between them counted once (a
    transition's next state is the next transition's state)."""
    k = min(SAMPLE, len(buffer))
    if k == 0:
        return 0
    seen: set[int] = set()
    try:
        items = [buffer[-i] for i in range(1, k + 1)]
    except (IndexError, RuntimeError):  # changed by another thread while read
        return 0
    return sum(_size(x, seen, DEPTH) for x in items) // k


def filling(deques: list[Any], holder_of: Callable[[Any], str | None]) -> list[list[Any]]:
    """[holder, items, maxlen, bytes an item] for the deques with a maxlen, not full, that hold
    MIN_ITEMS or MIN_BYTES, the largest first (by what their items hold)."""
    open_ = [d for d in deques if d.maxlen is not None and FEWEST <= len(d) < d.maxlen]
    sized = sorted(((item_bytes(d), d) for d in open_), key=lambda x: -x[0] * len(x[1]))
    sized = [(n, d) for n, d in sized if len(d) >= MIN_ITEMS or n * len(d) >= MIN_BYTES]
    out: list[list[Any]] = []
    for size, d in sized[:MAX_BUFFERS]:
        holder = holder_of(d)
        if holder is not None:
            out.append([holder, len(d), int(d.maxlen), size])
    return out
