"""A list one of the script's classes keeps below a number of its own: the replay memory of the old
PyTorch DQN tutorial (`if len(self.memory) < self.capacity: self.memory.append(None)`, then
`self.memory[self.position] = ...` in a ring), or one trimmed as it grows (`if len(self.buf) >
self.max_size: self.buf.pop(0)`, `self.buf = self.buf[-self.max_size:]`). Its growth stops at that
number, as a deque's at its maxlen: fitted over a short run and projected on, it read as a leak
("runs out in about 34 min" for a 40,000-transition memory of Atari frames, ~1.1 GB at most).

Read from the class's source (once a class), the number from the object (or the class's module).
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Any


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _bound_name(node: ast.expr) -> tuple[str, bool] | None:
    """(name, on self) for `self.capacity` or `CAPACITY`."""
    attr = _self_attr(node)
    if attr is not None:
        return attr, True
    return (node.id, False) if isinstance(node, ast.Name) else None


def _len_of(node: ast.expr) -> str | None:
    """A for `len(self.A)`."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
            and len(node.args) == 1):
        return _self_attr(node.args[0])
    return None


_READ: dict[type, dict[str, tuple[str, bool]]] = {}  # each class's source read once


def _bounds_in(cls: type) -> dict[str, tuple[str, bool]]:
    """list attribute -> (the name bounding it, on self) as the class's methods write it."""
    if cls not in _READ:
        _READ[cls] = _read(cls)
    return _READ[cls]


def _read(cls: type) -> dict[str, tuple[str, bool]]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return {}
    out: dict[str, tuple[str, bool]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            held = next((a for a in map(_len_of, sides) if a is not None), None)
            bound = next((b for b in map(_bound_name, sides) if b is not None and b[0] != held), None)
            if held is not None and bound is not None:
                out.setdefault(held, bound)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            # self.buf = self.buf[-self.max_size:]
            held = _self_attr(node.targets[0])
            v = node.value
            if (held is not None and isinstance(v, ast.Subscript) and _self_attr(v.value) == held
                    and isinstance(v.slice, ast.Slice) and isinstance(v.slice.lower, ast.UnaryOp)
                    and isinstance(v.slice.lower.op, ast.USub)):
                bound = _bound_name(v.slice.lower.operand)
                if bound is not None:
                    out.setdefault(held, bound)
    return out


def list_capacity(obj: Any, attr: str) -> tuple[str, int] | None:
    """(how the bound reads, its value) where the class of `obj` keeps its list `attr` below a
    number: ('ReplayMemory.capacity', 40000), ('CAPACITY', 10000); None otherwise."""
    cls = type(obj)
    try:
        found = _bounds_in(cls).get(attr)
        if found is None:
            return None
        name, on_self = found
        if on_self:
            value = getattr(obj, name, None)
            said = f"{cls.__name__}.{name}"
        else:
            value = getattr(sys.modules.get(cls.__module__), name, None)
            said = name
    except Exception:  # the user's class: its source or attributes may not be readable
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return said, value
