"""The model's arguments that are almost all zeros (probes/sparse_args.py), with what the source
says of them: the argument's own text at the call (`A_hat` in `model(A_hat, X)`), and the line of
the module's forward that multiplies it as a matrix (`a @ self.l1(x)`: the parameter at that
position an operand of `@`, matmul, mm or bmm, directly or through the names it assigns)."""

from __future__ import annotations

import ast
import functools
from typing import Any

from gpubottle.analysis.hand_attention import Scope, product_operands
from gpubottle.analysis.loop_source import parsed, split_site
from gpubottle.evidence import SparseInput

_PRODUCTS = ("matmul", "mm", "bmm")
_KEEPS = ("float", "double", "half", "to", "contiguous", "detach", "cpu", "cuda")


def _argument_text(path: str, line: int, names: list[str], position: int) -> str | None:
    p = parsed(path)
    if p is None:
        return None
    for node in ast.walk(p[1]):
        if (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)
                and ast.unparse(node.func) in names and len(node.args) > position):
            return ast.unparse(node.args[position])
    return None


def _is_name(name: str, node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_it(node: ast.AST, is_param: Any, scope: Scope, reach: int) -> bool:
    """`node` is the parameter itself: its name, a method of it that keeps it a matrix
    (`adj.float()`, `adj.to(x)`), or a name assigned one of those (`norm = adj`), `reach` deep;
    not a value computed from it (`self.l1(x)` is no longer x)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPS:
        node = node.func.value
    if is_param(node):
        return True
    return reach > 0 and isinstance(node, ast.Name) and any(
        _is_it(v, is_param, scope, reach - 1) for v, _ in scope.values.get(node.id, []))


def _multiplied_at(path: str, cls: str, position: int) -> int | None:
    """The line of `cls`'s forward (in `path`) that multiplies its parameter at `position`."""
    p = parsed(path)
    if p is None:
        return None
    for c in ast.walk(p[1]):
        if not (isinstance(c, ast.ClassDef) and c.name == cls):
            continue
        fn = next((f for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
        params = [a.arg for a in fn.args.args[1:]] if fn is not None else []
        if fn is None or position >= len(params):
            return None
        scope = Scope(fn)
        is_param = functools.partial(_is_name, params[position])
        lines = []
        for node in ast.walk(fn):
            if any(_is_it(o, is_param, scope, 2) for o in product_operands(node, _PRODUCTS)):
                lines.append(int(getattr(node, "lineno", 0)))
        return min(lines) if lines else None
    return None


def sparse_inputs(records: list[list[Any]] | None, names: list[str], cwd: str | None) -> list[SparseInput]:
    out = []
    for r in records or ():
        cls, site, position, shape, density = r[:5]
        at = split_site(site, cwd)
        arg = _argument_text(at[0], at[1], names, int(position)) if at else None
        used = _multiplied_at(at[0], str(cls), int(position)) if at else None
        path = (site or "").rpartition(":")[0]
        out.append(SparseInput(str(cls), site, int(position), [int(d) for d in shape], float(density), arg,
                               f"{path}:{used}" if used else None))
    return out
