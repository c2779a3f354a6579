"""Whether a Dataset's own __getitem__ only indexes its arrays, read from its source: then
`ds[list_of_indices]` is the whole batch, and the DataLoader's one call a sample and stack of the
results are work that a BatchSampler removes (rules/input/fixes.batch_index_fix).

Accepted, for an argument `i`: `return self.x[i], self.y[i]` (a tuple, a list, a dict's values or
one item); each item possibly converted as tutorials write it, `torch.tensor(self.x[i],
dtype=...)`, `torch.from_numpy(self.x[i])`, `self.x[i].float()`; and names assigned such items
first (`x = self.x[i]` ... `return x, y`). Anything else (a transform, a file read, a print) is
per-sample work that a list of indices would not do: not accepted.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

CONVERTERS = ("tensor", "as_tensor", "from_numpy", "asarray", "array", "FloatTensor", "LongTensor")
METHODS = ("float", "long", "int", "double", "half", "bfloat16", "bool", "clone", "contiguous", "to",
           "astype")


def indexed_attrs(method: Any) -> list[str] | None:
    """The attributes of `self` that __getitem__ indexes with its argument, where indexing them is
    all it does; None where it does anything else or its source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, ast.FunctionDef) or len(fn.args.args) != 2 or fn.args.vararg or fn.args.kwarg:
        return None
    me, index = fn.args.args[0].arg, fn.args.args[1].arg
    body = [b for b in fn.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    local: dict[str, str] = {}
    for stmt in body[:-1]:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            return None
        attr = _item(stmt.value, me, index, local)
        if attr is None:
            return None
        local[stmt.targets[0].id] = attr
    value = body[-1].value
    items = (value.elts if isinstance(value, (ast.Tuple, ast.List)) else
             [v for v in value.values if v is not None] if isinstance(value, ast.Dict) else [value])
    attrs = [_item(it, me, index, local) for it in items]
    return [a for a in attrs if a is not None] if attrs and None not in attrs else None


def _item(node: ast.expr, me: str, index: str, local: dict[str, str]) -> str | None:
    """The attribute an item indexes (through conversions), or None."""
    if isinstance(node, ast.Name):
        return local.get(node.id)
    if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == index
            and isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
            and node.value.value.id == me):
        return node.value.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        if func.attr in CONVERTERS and isinstance(func.value, ast.Name) and len(node.args) == 1:
            return _item(node.args[0], me, index, local)  # torch.tensor(self.x[i], dtype=...)
        if func.attr in METHODS:
            return _item(func.value, me, index, local)  # self.x[i].float()
    return None


def rows(x: Any) -> bool:
    """A torch tensor or a numpy array with at least one dimension (a list takes no list index)."""
    try:
        import torch

        if isinstance(x, torch.Tensor):
            return x.dim() >= 1
    except Exception:
        pass
    return type(x).__module__ == "numpy" and type(x).__name__ == "ndarray" and getattr(x, "ndim", 0) >= 1
