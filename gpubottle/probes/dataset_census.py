"""How many Python objects a dataset holds where its workers would read them: the precondition of
copy-on-read.

A forked DataLoader worker copies a page of its parent's memory only when it writes to it, and
reading a Python object writes its reference count: a dataset kept as lists, dicts, tuples or
object arrays is copied into every worker as it is read, while one numpy array, a tensor, a memory
map or a dataset that makes its samples (or reads them from files) leaves the pages shared. A
worker's memory that grows while the dataset holds few objects grows for another reason (its own
start-up, the batches it makes), and is not a copy of anything.

The census is cheap: len() of the containers among the dataset's attributes and the globals its
__getitem__/__iter__ names, a few levels into plain objects and wrapped datasets, never element by
element. It runs once, when the DataLoader is built.
"""

from __future__ import annotations

import dis
import types
from typing import Any

_CONTAINERS = (list, tuple, dict, set, frozenset)
_DEPTH = 3  # a dataset -> its store object -> that object's lists
_MAX_ATTRS = 256  # attributes looked at per object (a wide object is read in part)


def held_objects(ds: Any) -> int | None:
    """Python objects held by `ds` in containers (lists, dicts, object arrays, object columns),
    counted by length; None when the dataset could not be read at all."""
    try:
        seen: set[int] = set()
        total = _count(ds, _DEPTH, seen)
        for name in ("__getitem__", "__iter__"):
            total += _globals_named(getattr(type(ds), name, None), seen)
        return total
    except Exception:
        return None


def _count(obj: Any, depth: int, seen: set[int]) -> int:
    if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, type)):
        return 0
    seen.add(id(obj))
    if isinstance(obj, _CONTAINERS):
        n = len(obj)
        # A short container of containers (a tuple of columns, a dict of lists) holds their
        # elements too; a long one's elements are counted by its length alone.
        if n <= 64 and depth > 0:
            items = obj.values() if isinstance(obj, dict) else obj
            n += sum(_count(x, depth - 1, seen) for x in items)
        return n
    kind = type(obj).__module__.split(".")[0]
    if kind == "numpy":
        return int(obj.size) if getattr(getattr(obj, "dtype", None), "kind", "") == "O" else 0
    if kind == "pandas":
        return _pandas_objects(obj)
    if depth <= 0 or isinstance(obj, (types.ModuleType, types.FunctionType, types.MethodType)):
        return 0
    fields = getattr(obj, "__dict__", None)
    if not isinstance(fields, dict):
        return 0
    values = list(fields.values())[:_MAX_ATTRS]
    return sum(_count(v, depth - 1, seen) for v in values)


def _pandas_objects(obj: Any) -> int:
    """Object-dtype cells (strings, lists) of a DataFrame or Series: one Python object each."""
    dtypes = getattr(obj, "dtypes", None)
    if dtypes is None:
        return 0
    if hasattr(dtypes, "__iter__"):  # a DataFrame: its dtypes per column
        return len(obj) * sum(1 for d in dtypes if getattr(d, "kind", "") == "O")
    return len(obj) if getattr(dtypes, "kind", "") == "O" else 0


def _globals_named(fn: Any, seen: set[int]) -> int:
    """A module-level list the dataset's __getitem__ reads (`return ROWS[i]`) is held all the same.
    Only the names it loads as globals (co_names holds attribute names too: `self.df` is no global
    `df`)."""
    code = getattr(fn, "__code__", None)
    glob = getattr(fn, "__globals__", None)
    if code is None or not isinstance(glob, dict):
        return 0
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    return sum(_count(glob[n], 1, seen) for n in names if isinstance(n, str) and n in glob)
