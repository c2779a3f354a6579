"""Attention written by hand in the model's forward, as GPT-style scripts write it: scores from
q @ k^T (scaled, masked), a softmax, the probabilities times v. torch's
F.scaled_dot_product_attention computes the same in fused kernels (flash attention on a CPU as on a
GPU) without the (batch, heads, L, L) scores and probabilities written out and kept for backward.
Measured here: forward and backward of 8 x 4 heads x 512 x 64, 134 ms by hand against 58 ms; a
2-block causal model at 8 x 512 tokens (tests/scripts/real_code/hand_attention.py), 20 steps in
14.3 s against 11.5 s.

Read from the source of the files the main thread's samples are in: a function whose softmax is of
a value computed by a matrix product (`@`, matmul, bmm, einsum), directly or through the names it
assigns, and whose result is itself multiplied by a matrix. Its share: the main thread's samples at
those statements (the forward's part: their backward is in autograd's engine, which names no line).
"""

from __future__ import annotations

import ast
import functools
import operator
from collections import Counter
from collections.abc import Callable

from gpubottle.analysis.loop_source import call_name, parsed
from gpubottle.analysis.stacks import Frame
from gpubottle.evidence import StackFrameShare
from gpubottle.probes.sites import is_user_file, place

_PRODUCTS = ("matmul", "bmm", "einsum")
_REACH = 4  # names followed back from the softmax's argument (scores -> masked -> scaled -> product)
_TRANSPOSED = ("transpose", "mT", "T", "permute", "swapaxes", "transpose_")


def _is_product(node: ast.AST) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)) or (
        isinstance(node, ast.Call) and call_name(node.func) in _PRODUCTS)


def product_operands(node: ast.AST, products: tuple[str, ...]) -> list[ast.expr]:
    """The matrices `node` multiplies: both sides of `@`, or the tensor arguments of a call of one
    of `products` (einsum's after its equation); [] where it is no such product."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return [node.left, node.right]
    if isinstance(node, ast.Call) and call_name(node.func) in products:
        return list(node.args[1:] if call_name(node.func) == "einsum" else node.args)
    return []


def _is_scores(node: ast.AST) -> bool:
    """q @ k^T: a product with a transposed operand, or an einsum (which says its own axes). A
    softmax over x @ W (a mixture of experts' gate, a classifier's head) is not attention."""
    if isinstance(node, ast.Call) and call_name(node.func) == "einsum":
        return True
    if not _is_product(node):
        return False
    operands = [node.right] if isinstance(node, ast.BinOp) else getattr(node, "args", [])[1:2]
    return any(isinstance(n, ast.Attribute) and n.attr in _TRANSPOSED
               for o in operands for n in ast.walk(o))


def _is_softmax(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and call_name(node.func) == "softmax"


class Scope:
    """One function's assignments: each name's values and the lines that assign them."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.values: dict[str, list[tuple[ast.expr, int]]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and node.value is not None:
                for t in node.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.values.setdefault(n.id, []).append((node.value, node.lineno))

    def reaches(self, expr: ast.AST, found: Callable[[ast.AST], bool], reach: int, lines: set[int]) -> bool:
        """Whether `expr` holds a node `found` accepts, in itself or in the values of the names it
        reads (followed `reach` assignments back); the lines of the assignments it went through
        are added to `lines`."""
        if any(found(n) for n in ast.walk(expr)):
            return True
        if reach <= 0:
            return False
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                for value, line in self.values.get(n.id, []):
                    if value is not expr and self.reaches(value, found, reach - 1, lines):
                        lines.add(line)
                        return True
        return False


def _softmax_input(call: ast.Call) -> ast.expr | None:
    """The value a softmax call normalises: its first argument where it is not a constant
    (F.softmax(x, -1), torch.softmax(x), an nn.Softmax module's self.softmax(x)), else the tensor
    it is a method of (x.softmax(-1), x.softmax(dim=-1))."""
    if call.args and not isinstance(call.args[0], ast.Constant | ast.UnaryOp):
        return call.args[0]
    return call.func.value if isinstance(call.func, ast.Attribute) else None


@functools.lru_cache(maxsize=64)
def attention_lines(path: str) -> tuple[tuple[str, int, frozenset[int]], ...]:
    """(function, softmax's line, the chain's lines) for each attention written by hand in `path`."""
    p = parsed(path)
    if p is None:
        return ()
    out = []
    for name, fn in functions(p[1]):
        scope: Scope | None = None
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not _is_softmax(node):
                continue
            scores = _softmax_input(node)
            scope = scope or Scope(fn)
            lines: set[int] = {node.lineno}
            if scores is None or not scope.reaches(scores, _is_scores, _REACH, lines):
                continue
            # ... and its probabilities multiplied by v (through dropout or a name or two).
            used = [n for n in ast.walk(fn) if isinstance(n, ast.expr) and _is_product(n)
                    and n.lineno >= node.lineno
                    and scope.reaches(n, functools.partial(operator.is_, node), 2, lines)]
            if used:
                lines.update(n.lineno for n in used)
                out.append((name, node.lineno, frozenset(lines)))
    return tuple(out)


Pieces = tuple[tuple[str, int, frozenset[int]], ...]  # (function, its line, the lines it spans) each


def most_sampled(stacks: list[list[Frame]], found: Callable[[str], Pieces]) -> StackFrameShare | None:
    """The piece of code `found` reads from a file ((function, its line, the lines it spans) each)
    that most of `stacks` (the main thread's) are at: its function, its line and the share of
    `stacks` at its lines, at each sample's innermost user frame (the statement whose torch calls
    the sample is in); None where no sample is."""
    if not stacks:
        return None
    by: Counter[tuple[str, str, int]] = Counter()
    for st in stacks:
        f = next((f for f in reversed(st) if is_user_file(f.file)), None)
        hit = next(((name, line) for name, line, lines in found(f.file) if f.line in lines),
                   None) if f is not None else None
        if f is not None and hit is not None:
            by[(hit[0], f.file, hit[1])] += 1
    if not by:
        return None
    (name, file, line), n = by.most_common(1)[0]
    return StackFrameShare(function=name, location=place(file, line), share=round(n / len(stacks), 4))


def functions(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Each function of `tree` by the name a report gives it (`Class.method`)."""
    owner = {id(f): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
    return [(f"{owner[id(fn)]}.{fn.name}" if id(fn) in owner else fn.name, fn) for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]


def hand_attention(stacks: list[list[Frame]]) -> StackFrameShare | None:
    """The attention written by hand most sampled in `stacks` (the main thread's): its function, its
    softmax's line and the share of `stacks` at its statements; None without one."""
    return most_sampled(stacks, attention_lines)
