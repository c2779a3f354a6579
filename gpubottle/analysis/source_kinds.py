"""Kinds of work read from the user's line itself (its source), where the stack says no more than
the line: a C call (torch.tensor of a list, a list's search) or Python of the user's own (a
comprehension indexing one element at a time). Each names the kind work_kinds.py holds the
remedy of; the analysis of each shape is in its own module."""

from __future__ import annotations

import ast
import functools
import linecache
import re

from gpubottle.analysis.class_scan import class_scan
from gpubottle.analysis.db_queries import db_query
from gpubottle.analysis.element_writes import element_added, element_write
from gpubottle.analysis.growth import LIST_FRONT, line_growth_kind
from gpubottle.analysis.invariant import sample_invariant
from gpubottle.analysis.list_search import list_search
from gpubottle.analysis.list_tensor import list_tensor_arg
from gpubottle.analysis.loop_source import call_name, innermost, parsed
from gpubottle.analysis.random_picks import shuffles_to_pick, sorts_to_pick
from gpubottle.analysis.same_file import same_file_opened
from gpubottle.analysis.window_loop import window_loop
from gpubottle.analysis.work_kinds import (
    CLASS_SCAN,
    DB_QUERY,
    DEQUE_INDEX,
    ELEMENT_ADDS,
    ELEMENT_WRITES,
    GATHER,
    LIST_FRONT_WORK,
    LIST_REMOVE,
    LIST_SEARCH,
    LIST_TENSOR,
    PER_INDEX_DRAW,
    SAME_FILE,
    SAMPLE_INVARIANT,
    SHUFFLE_TO_PICK,
    SORT_TO_PICK,
    UNPICKLING,
    WINDOW_LOOP,
)

_GATHER = re.compile(r"\[\s*[A-Za-z_][\w.]*\[\s*([A-Za-z_]\w*)\s*\]"  # [X[j]
                     r"\s+for\s+\1\s+in\s+[A-Za-z_][\w.]*(\[[^\]]*\])?\s*\]")  # for j in idx]


def gather_kind(path: str, line: int) -> str | None:
    """GATHER where the comprehension at `line` of `path` is `[X[j] for j in idx]`."""
    return GATHER if _GATHER.search(linecache.getline(path, line)) else None


def list_tensor_kind(path: str, line: int) -> str | None:
    """LIST_TENSOR where `line` of `path` builds a tensor from a Python list (torch.tensor(xs))."""
    return LIST_TENSOR if list_tensor_arg(path, line) is not None else None


def db_query_kind(path: str, line: int) -> str | None:
    """DB_QUERY where `line` of `path` queries a database for rows (a DB-API driver's execute, in C)."""
    return DB_QUERY if db_query(path, line) else None


# `pickle.load(f)`, `pickle.loads(b)`, cPickle's, dill's: the C unpickler, no frame beneath the line
_UNPICKLE = re.compile(r"\b(?:c?[Pp]ickle|_pickle|dill|cloudpickle)\.loads?\(")


def unpickling_kind(path: str, line: int) -> str | None:
    """UNPICKLING where `line` of `path` unpickles (a file a sample, in C: no Python frame below),
    or is the `with` that opens the file its body unpickles (its open and close are sampled at the
    `with` line: all of pickle_files.py's samples were)."""
    if _UNPICKLE.search(linecache.getline(path, line)):
        return UNPICKLING
    p = parsed(path)
    node = innermost(p[1], line, (ast.With,)) if p is not None else None
    if not isinstance(node, ast.With) or node.lineno != line:
        return None
    body = [ast.get_source_segment(p[0], s) or "" for s in node.body] if p is not None else []
    return UNPICKLING if any(_UNPICKLE.search(text) for text in body) else None


def element_write_kind(path: str, line: int) -> str | None:
    """ELEMENT_WRITES where `line` of `path` writes one element of a tensor at the index of the
    loops around it (`out[i, j] = v`), ELEMENT_ADDS where it adds to one (`cm[t, p] += 1`)."""
    if element_write(path, line) is None:
        return None
    return ELEMENT_ADDS if element_added(path, line) else ELEMENT_WRITES


def shuffle_kind(path: str, line: int) -> str | None:
    """SHUFFLE_TO_PICK where `line` of `path` shuffles a whole range to keep a batch of it,
    SORT_TO_PICK where it sorts every value to keep a few."""
    return (SHUFFLE_TO_PICK if shuffles_to_pick(path, line) else
            SORT_TO_PICK if sorts_to_pick(path, line) else None)


def front_kind(path: str, line: int) -> str | None:
    """LIST_FRONT_WORK where `line` of `path` takes a value off a list's front (`buffer.pop(0)`)."""
    return LIST_FRONT_WORK if line_growth_kind(path, line) == LIST_FRONT else None


def list_search_kind(path: str, line: int) -> str | None:
    """LIST_SEARCH where `line` of `path` searches a list the file binds (`w in vocab`), LIST_REMOVE
    where it removes a value from one (`pos.remove(p)`), DEQUE_INDEX where it draws from a deque
    (`random.sample(buffer, 64)`)."""
    found = list_search(path, line)
    if found is None:
        return None
    return {"remove": LIST_REMOVE, "deque": DEQUE_INDEX}.get(found.how, LIST_SEARCH)


def deque_kind(path: str, line: int) -> str | None:
    """DEQUE_INDEX where `line` of `path` draws from (or indexes) a deque the file binds, whatever
    frames lie beneath it (random.sample is Python, in random.py)."""
    found = list_search(path, line)
    return DEQUE_INDEX if found is not None and found.how == "deque" else None


def class_scan_kind(path: str, line: int) -> str | None:
    """CLASS_SCAN where `line` of `path` scans every label self holds for a sample's class (its
    comprehension's Python or numpy's C beneath)."""
    return CLASS_SCAN if class_scan(path, line) else None


def window_loop_kind(path: str, line: int) -> str | None:
    """WINDOW_LOOP where `line` of `path` is inside a loop over a sequence's windows, whatever its
    calls beneath (numpy's own Python, torch's C)."""
    return WINDOW_LOOP if window_loop(path, line) is not None else None


def same_file_kind(path: str, line: int) -> str | None:
    """SAME_FILE where `line` of `path` opens (or reads, inside its `with`) a file whose path does
    not depend on its function's parameters: the same file for every sample."""
    return SAME_FILE if same_file_opened(path, line) is not None else None


def sample_invariant_kind(path: str, line: int) -> str | None:
    """SAMPLE_INVARIANT where `line` of `path`, in a dataset's (or a transform's) method, computes
    from self's attributes alone, the same for every sample."""
    return SAMPLE_INVARIANT if sample_invariant(path, line) is not None else None


def _one_weighted_draw(call: ast.Call) -> bool:
    """A weighted random choice of one index: numpy's choice(a, p=...) with no size,
    random.choices(population, weights) with k=1, torch.multinomial(w, 1)."""
    name = call_name(call.func)
    keys = {k.arg: k.value for k in call.keywords}

    def one(node: ast.expr | None) -> bool:
        return node is None or (isinstance(node, ast.Constant) and node.value in (None, 1))

    if name == "choice":  # choice(a, size=None, replace=True, p=None)
        size = keys.get("size", call.args[1] if len(call.args) > 1 else None)
        return ("p" in keys or len(call.args) >= 4) and one(size)
    if name == "choices":  # choices(population, weights=None, *, cum_weights=None, k=1)
        return bool({"weights", "cum_weights"} & keys.keys() or len(call.args) >= 2) and one(keys.get("k"))
    if name == "multinomial":  # torch.multinomial(input, num_samples) or w.multinomial(num_samples)
        n = keys.get("num_samples", call.args[-1] if call.args else None)
        return isinstance(n, ast.Constant) and n.value == 1
    return False


@functools.lru_cache(maxsize=256)
def draw_kind(path: str, line: int) -> str | None:
    """PER_INDEX_DRAW where `line` of `path`, inside a loop, makes a weighted random choice of one
    index (a sampler's __iter__ yielding one draw at a time)."""
    p = parsed(path)
    if p is None:
        return None
    for loop in ast.walk(p[1]):
        if isinstance(loop, (ast.For, ast.While)) and loop.body and (
                loop.body[0].lineno <= line <= (loop.end_lineno or loop.lineno)):
            for call in ast.walk(loop):
                if (isinstance(call, ast.Call) and call.lineno <= line <= (call.end_lineno or call.lineno)
                        and _one_weighted_draw(call)):
                    return PER_INDEX_DRAW
    return None
