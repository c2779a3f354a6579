"""An embedding lookup written as a matrix product in the model's forward: `F.one_hot(ids, V)`
(made float) times a (V, D) weight. It writes a (..., V) tensor of zeros and ones and multiplies
every zero, forward and backward; F.embedding(ids, W) (W[ids]) gives the same rows, and the same
gradient for W, without it. Measured here: a 20,000-word bag of words at 32 x 64 tokens, 200
steps 39.8 s written so, 2.8 s with F.embedding (the script run whole, twice each).

Read from the source of the files the main thread's samples are in: a function with a one_hot call
whose value reaches an operand of a matrix product (`@`, matmul, mm, bmm, einsum), directly or
through the names it assigns. Its share: the main thread's samples at those statements (the
forward's part: the product's backward is in autograd's engine, which names no line)."""

from __future__ import annotations

import ast
import functools

from gpubottle.analysis.hand_attention import Scope, functions, most_sampled, product_operands
from gpubottle.analysis.loop_source import call_name, parsed
from gpubottle.analysis.stacks import Frame
from gpubottle.evidence import StackFrameShare

_PRODUCTS = ("matmul", "mm", "bmm", "einsum")
_REACH = 3  # names followed back from the product's operand (vecs <- onehot <- one_hot(...))


def _is_onehot(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and call_name(node.func) == "one_hot"


@functools.lru_cache(maxsize=64)
def onehot_products(path: str) -> tuple[tuple[str, int, frozenset[int]], ...]:
    """(function, the product's line, the chain's lines) for each one-hot product in `path`."""
    p = parsed(path)
    if p is None:
        return ()
    out = []
    for name, fn in functions(p[1]):
        if not any(_is_onehot(n) for n in ast.walk(fn)):
            continue
        scope = Scope(fn)
        for node in ast.walk(fn):
            lines: set[int] = set()
            if isinstance(node, ast.expr) and any(
                    scope.reaches(o, _is_onehot, _REACH, lines) for o in product_operands(node, _PRODUCTS)):
                out.append((name, node.lineno, frozenset(lines | {node.lineno})))
    return tuple(out)


def onehot_lookup(stacks: list[list[Frame]]) -> StackFrameShare | None:
    """The one-hot product most sampled in `stacks` (the main thread's): its function, the
    product's line and the share of `stacks` at its statements; None without one."""
    return most_sampled(stacks, onehot_products)
