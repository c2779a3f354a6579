"""The hottest records (each DataLoader fetch, backward call and optimizer step) packed as doubles
into one array instead of a tuple and its floats each, until the recorder's flush thread writes them.

Why: records held for the flush interval (0.5 s) are small objects kept alive among the ones the
script's own Python code makes and frees at a high rate, in the same pymalloc pools; the pools they
pin stay partly used, and the script's allocations spread over more of them. Measured on
benchmarks/many_threads.py (16 Python threads building batches from lists of floats, one core): the
threads' CPU a batch +7% (5.2-8.3% in 4 side-by-side rounds) with the records kept, +1.0% with them
dropped, +1.3% with tuples kept but Python's allocator set to malloc (PYTHONMALLOC=malloc); the
hooks' bodies without their records cost nothing resolvable. A packed record keeps no object alive:
its values are copied into the array, and the floats and the tuple the hook made are freed at once.

A record is its code, then its fields in wire order; None is NaN. Ids (a thread's ident, an
optimizer's id(), both addresses under 2**53) are exact as doubles.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import Any

from gpubottle.wire import Backward, Batch, OptimizerStep

BATCH = 1.0  # loader, t0, t1, cpu, ended, rq, thread
OPTIMIZER_STEP = 2.0  # opt, t, t0, thread
BACKWARD = 3.0  # t0, t1
NAN = math.nan

_INT = 0  # how a field is read back: an int, a float, or either one or None
_FLOAT = 1
_INT_OR_NONE = 2
_FLOAT_OR_NONE = 3
_LAYOUT: dict[float, tuple[Any, tuple[int, ...]]] = {
    BATCH: (Batch, (_INT, _FLOAT, _FLOAT, _FLOAT_OR_NONE, _INT, _FLOAT_OR_NONE, _INT_OR_NONE)),
    OPTIMIZER_STEP: (OptimizerStep, (_INT, _FLOAT, _FLOAT_OR_NONE, _INT_OR_NONE)),
    BACKWARD: (Backward, (_FLOAT, _FLOAT)),
}


def packed() -> array[float]:
    return array("d")


def _value(x: float, kind: int) -> Any:
    if kind == _FLOAT:
        return x
    if kind == _INT:
        return int(x)
    if x != x:  # NaN: None
        return None
    return int(x) if kind == _INT_OR_NONE else x


def _records(chunk: array[float]) -> Iterator[tuple[Any, tuple[int, ...], int]]:
    """Each whole record's class, field kinds and first field's index, in order. A code this
    version does not know, or a record cut short, ends the chunk (nothing after it can be read):
    never the script's problem."""
    i, n = 0, len(chunk)
    while i < n:
        layout = _LAYOUT.get(chunk[i])
        if layout is None or i + 1 + len(layout[1]) > n:
            return
        yield layout[0], layout[1], i + 1
        i += 1 + len(layout[1])


def unpack(chunk: array[float]) -> list[Any]:
    """The records in `chunk`, in order."""
    return [cls(*(_value(x, k) for x, k in zip(chunk[i:i + len(kinds)], kinds)))
            for cls, kinds, i in _records(chunk)]


def count(chunk: array[float]) -> int:
    """How many records `chunk` holds (without making them)."""
    return sum(1 for _ in _records(chunk))
