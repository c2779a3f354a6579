"""A tensor the script holds whose autograd graph grows step by step: `running_loss += loss` makes
each step's sum point at the last one's grad_fn, so every step's graph stays alive, and with it
what those graphs' nodes still hold after backward (a GRU's on this CPU: ~1 MB a step at 200
tokens; a Linear layer's next to nothing). No group of tensors piles up where Python sees them
(one tensor holds it all), so the census's tensor groups miss it. Each census walks the graphs of
the tensors that have a grad_fn (~4 us a node here, NODES_CAP in all) and keeps the largest; the
second tells one graph across the steps (it still holds the first one's root, known by its type
and sequence number) from a graph that is only larger (a loop unrolled over a longer input), and
where it grew names what holds it and the script's line that adds to it. Measured here:
tests/scripts/running_loss.py (a GRU, 713 nodes a step) grows ~23 MB/s; with `loss.item()` flat.
"""

from __future__ import annotations

import ast
import linecache
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

from gpubottle.probes.kept import attribute_name, local_name, module_name
from gpubottle.probes.sites import is_user_file, place

NODES_CAP = 30_000  # graph nodes walked a census at most (~0.12 s: a census already takes ~0.2 s)
MIN_GROWN = 50  # nodes added between the censuses before its holder is looked for (a look may
# scan the heap); the rule decides (rules/thresholds.py GRAPH_MIN_GROWN_NODES)


Mark = tuple[Any, int]  # a graph node's type and sequence number: which node, without holding it


class Largest(NamedTuple):
    tensor: Any
    nodes: int  # its graph's nodes no tensor walked before it reached
    capped: bool  # the walk stopped at NODES_CAP: at least that many
    spans: bool  # its graph holds the node `mark` names (the first census's largest graph's root)
    root: Mark | None  # its grad_fn, named so


def _mark(fn: Any) -> Mark | None:
    """A node named by its type and autograd's sequence number (each node's, increasing as they are
    created, per thread): holding the node itself would keep its graph alive, and with it saved
    activations where it was not yet backpropagated (a graph retained, an evaluation's)."""
    try:
        return type(fn), int(fn._sequence_nr())
    except Exception:
        return None


def _is_marked(node: Any, mark: Mark) -> bool:
    if type(node) is not mark[0]:
        return False
    try:
        return int(node._sequence_nr()) == mark[1]
    except Exception:
        return False


def _walk(root: Any, seen: set[Any]) -> Iterator[Any]:
    """`root` and the graph nodes beneath it not in `seen` (which it fills), until `seen` holds
    NODES_CAP. The first input popped next: down a running sum's chain first (`running += loss` adds
    to its own last grad_fn), so the first census's root is reached before the cap even where each
    step's graph has thousands of nodes (a GRU over 200 tokens)."""
    seen.add(root)
    yield root
    todo = [root]
    while todo and len(seen) < NODES_CAP:
        try:
            nexts = todo.pop().next_functions
        except Exception:  # a node type without inputs to read
            continue
        for nxt, _ in reversed(nexts):
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
                yield nxt


def largest_graph(tensors: list[Any], mark: Mark | None = None) -> Largest | None:
    """The tensor whose autograd graph has the most nodes no tensor walked before it reached (a
    loss summed into a running total: every step's graph). None where no tensor has a grad_fn."""
    seen: set[Any] = set()
    best: Largest | None = None
    for t in tensors:
        try:
            fn = t.grad_fn
        except Exception:
            continue
        if fn is None or fn in seen:
            continue
        before = len(seen)
        spans = False
        for node in _walk(fn, seen):  # (walked whole: its size is what is measured)
            spans = spans or (mark is not None and _is_marked(node, mark))
        n = len(seen) - before
        if best is None or n > best.nodes:
            best = Largest(t, n, len(seen) >= NODES_CAP, spans, _mark(fn))
        if len(seen) >= NODES_CAP:
            break
    return best


def user_frames(frame: Any) -> list[Any]:
    """`frame` and the frames that called it, the script's own only, innermost first."""
    out = []
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            out.append(frame)
        frame = frame.f_back
    return out


def bound_name(target: Any, frame: Any) -> tuple[str, str, str | None, str | None] | None:
    """(name, file, function, class) of the script's variable that is `target`: a local of one of
    its running functions (function None at a module's top level), a module global, or an
    attribute of an object one of those holds (`self.total_loss`: class is its class's name)."""
    frames = user_frames(frame)
    for f in frames:
        code = f.f_code
        for k, v in list(f.f_locals.items()):
            if v is target:
                return k, code.co_filename, None if code.co_name == "<module>" else code.co_name, None
    for f in frames:
        for k, v in list(f.f_globals.items()):
            if v is target:
                return k, f.f_code.co_filename, None, None
    for f in frames:
        for v in list(f.f_locals.values()):
            attrs = getattr(v, "__dict__", None)
            if isinstance(attrs, dict) and not isinstance(v, type):
                for k, a in list(attrs.items()):
                    if a is target:
                        return k, f.f_code.co_filename, None, type(v).__name__
    return None


def _is(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name)


def adds_to(path: str, name: str, function: str | None) -> int | None:
    """The line of `path` that adds to `name` (`name += x`, `name = name + x`, `self.name += x`),
    inside `function` where it is a local; None where none is found (or the file is unreadable)."""
    try:  # (linecache: a notebook cell's code is there under its file name, not on disk)
        tree = ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError, RecursionError):
        return None
    scopes: list[ast.AST] = [tree]
    if function is not None:
        scopes = [n for n in ast.walk(tree)
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function]
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.AugAssign) and _is(node.target, name):
                return node.lineno
            if (isinstance(node, ast.Assign) and any(_is(t, name) for t in node.targets)
                    and any(_is(x, name) for x in ast.walk(node.value))):
                return node.lineno
    return None


def bound_head(target: Any, frame: Any) -> Any | None:
    """A tensor of the script's variables whose graph holds `target`'s: where `target` is an earlier
    value of a running sum that a list keeps (`running = running + loss; history.append(running)`),
    the sum itself, whose line is the one to change."""
    import torch

    fn = getattr(target, "grad_fn", None)
    if fn is None:
        return None
    frames = user_frames(frame)
    values = [v for f in frames for v in list(f.f_locals.values())]
    values += [v for f in frames for v in list(f.f_globals.values())]
    for v in values:
        if isinstance(v, torch.Tensor) and v is not target and v.grad_fn is not None \
                and any(node is fn for node in _walk(v.grad_fn, set())):
            return v
    return None


def named(target: Any) -> tuple[str, str | None] | None:
    """What holds the tensor `target`, named as the census names holders, and file:line where the
    script adds to it (the census runs inside a step: the script's frames are on the stack); where
    no variable of the script's is it, the variable whose running sum holds it (a list of its
    earlier values kept); None where neither."""
    frame = sys._getframe(1)
    found = bound_name(target, frame)
    if found is None:
        head = bound_head(target, frame)
        found = bound_name(head, frame) if head is not None else None
    if found is None:
        return None
    name, path, function, cls = found
    kind = type(target).__name__
    if cls is not None:
        holder = attribute_name(cls, name, kind)
    elif function is not None:
        holder = local_name(name, function, path, kind)
    else:
        holder = module_name(name, path, kind)
    line = adds_to(path, name, function if cls is None else None)
    return holder, place(path, line) if line is not None else None
