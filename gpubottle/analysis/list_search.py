"""Whether a line searches a Python list value by value: `vocab.index(w)`, `w in vocab`,
`pos.remove(p)`, `xs.count(v)` where the file binds that name to a list. Each such call compares
the value with the list's entries one at a time until it finds it (to the end for one not there);
remove() then shifts every entry after it. Measured here: a 5,002-word vocabulary looked up with
`vocab.index(w) if w in vocab` for 40 words a sample, 130 ms a batch of 64, through a dict made
once 0.5 ms; 60,000 indices drawn with random.choice and list.remove, 3.9 s an epoch, shuffled once
23 ms.

Read from the script's source at the sample's line (py-spy gives it; the search is C, so the user's
line is the sample's innermost frame). The container must be bound to a list in the same file (a
list display or comprehension, list(), sorted(), .tolist(), .split(), .readlines(), a sum or
repeat of those) and never to a set or dict there: `in` on a set or a dict's keys is one hash
lookup, not a search. A string's `in` and str.index are not searches of a list either.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass

from gpubottle.analysis.loop_source import assignments, dotted, parsed

# Methods of list that pass over it value by value (remove also shifts what follows).
_SEARCHES = {"index", "remove", "count"}
_LIST_MAKERS = {"list", "sorted"}
_LIST_METHODS = {"tolist", "split", "readlines", "splitlines"}
_HASHED_MAKERS = {"set", "frozenset", "dict", "Counter", "defaultdict", "OrderedDict"}
# Library calls that return a new list (random.sample(range(n), k): a user's items, drawn).
_LIST_FUNCTIONS = {"random.sample", "random.choices"}


_DEQUE_MAKERS = ("deque", "collections.deque")
# Calls that index their sequence argument at random positions (random.sample: one index a draw).
_DRAWS = {"random.sample", "random.choices", "random.choice"}


@dataclass(frozen=True)
class ListSearch:
    container: str  # the list as written (`vocab`, `self.labels`)
    how: str  # index | remove | count | in | deque (a deque indexed at random positions)


def _list_valued(node: ast.AST | None, lists: set[str]) -> bool:
    """A list display or comprehension, a call that returns a new list, a sum or repeat of one, or a
    name already known to be one."""
    if isinstance(node, (ast.List, ast.ListComp)):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        return _list_valued(node.left, lists) or _list_valued(node.right, lists)
    if isinstance(node, ast.Call):
        f = node.func
        return (isinstance(f, ast.Name) and f.id in _LIST_MAKERS) or (
            isinstance(f, ast.Attribute) and f.attr in _LIST_METHODS) or dotted(f) in _LIST_FUNCTIONS
    return isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) in lists


def _hashed(node: ast.AST | None) -> bool:
    if isinstance(node, (ast.Set, ast.SetComp, ast.Dict, ast.DictComp)):
        return True
    return isinstance(node, ast.Call) and dotted(node.func).rsplit(".", 1)[-1] in _HASHED_MAKERS


def _lists_valued(node: ast.AST | None, lists: set[str]) -> bool:
    """A dict whose values are lists: a comprehension of them (`{u: random.sample(...) for u in
    users}`), a display of only them, or defaultdict(list)."""
    if isinstance(node, ast.DictComp):
        return _list_valued(node.value, lists)
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(_list_valued(v, lists) for v in node.values)
    return (isinstance(node, ast.Call) and dotted(node.func).rsplit(".", 1)[-1] == "defaultdict"
            and len(node.args) == 1 and dotted(node.args[0]) == "list")


def _bound_only(path: str, test: Callable[[ast.AST | None], bool]) -> frozenset[str]:
    """The names every assignment in the file binds to a value that passes `test`."""
    p = parsed(path)
    if p is None:
        return frozenset()
    binds = assignments(p[1])
    found = {name for name, value in binds if test(value)}
    return frozenset(found - {name for name, value in binds if not test(value)})


@functools.lru_cache(maxsize=64)
def _lists_of(path: str) -> frozenset[str]:
    """The names the file binds only to dicts of lists (`seen[u]` is then a list)."""
    lists = set(_lists(path))
    return _bound_only(path, lambda v: _lists_valued(v, lists))


@functools.lru_cache(maxsize=64)
def _lists(path: str) -> frozenset[str]:
    """The names (`vocab`, `self.labels`) the file binds only to lists."""
    p = parsed(path)
    if p is None:
        return frozenset()
    binds = assignments(p[1])
    lists: set[str] = set()
    for _ in range(2):  # (a name bound to another list name, written before or after it)
        for name, value in binds:
            if _list_valued(value, lists):
                lists.add(name)
    hashed = {name for name, value in binds if _hashed(value)}
    return frozenset(lists - hashed)


@functools.lru_cache(maxsize=64)
def _deques(path: str) -> frozenset[str]:
    """The names the file binds only to a collections.deque (`buffer = deque(maxlen=N)`)."""
    return _bound_only(path, lambda v: isinstance(v, ast.Call) and dotted(v.func) in _DEQUE_MAKERS)


def _deque_indexed(node: ast.AST, deques: frozenset[str]) -> str | None:
    """The deque `node` indexes at a position that may be anywhere in it: drawn by random.sample
    (choices, choice) or a subscript other than its ends (`buffer[i]`, not `buffer[-1]`)."""
    if isinstance(node, ast.Call) and dotted(node.func) in _DRAWS and node.args and \
            dotted(node.args[0]) in deques:
        return dotted(node.args[0])
    if isinstance(node, ast.Subscript) and dotted(node.value) in deques and isinstance(node.ctx, ast.Load):
        at = node.slice
        end = isinstance(at, ast.Constant) or (
            isinstance(at, ast.UnaryOp) and isinstance(at.operand, ast.Constant))
        if not end and not isinstance(at, ast.Slice):
            return dotted(node.value)
    return None


@functools.lru_cache(maxsize=256)
def list_search(path: str, line: int) -> ListSearch | None:
    """The list search on `line` of `path`, None where the line makes none; a deque indexed at
    positions anywhere in it (random.sample(buffer, 64) of a replay buffer kept in a
    collections.deque) is one too (how "deque"): a deque reaches its i-th item by walking its
    blocks of 64 from the nearer end, so each draw passes over up to half of it. Measured here:
    random.sample of 64 transitions from a deque of 150,000, 541 us a step in a DQN's loop, from a
    list 57 us."""
    p = parsed(path)
    if p is None:
        return None
    lists, of_lists, deques = _lists(path), _lists_of(path), _deques(path)
    if not lists and not of_lists and not deques:
        return None
    for node in ast.walk(p[1]):
        if not (getattr(node, "lineno", 0) <= line <= (getattr(node, "end_lineno", None) or 0)):
            continue
        indexed = _deque_indexed(node, deques) if deques else None
        if indexed is not None:
            return ListSearch(indexed, "deque")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in _SEARCHES and node.args and dotted(node.func.value) in lists):
            return ListSearch(dotted(node.func.value), node.func.attr)
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Name, ast.Attribute)) \
                        and dotted(right) in lists:
                    return ListSearch(dotted(right), "in")
                # (a dict's list, `neg in seen[u]`: a user's items searched for a negative)
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Subscript) \
                        and dotted(right.value) in of_lists:
                    return ListSearch(ast.unparse(right), "in")
    return None
