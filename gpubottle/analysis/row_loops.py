"""A Python loop that runs torch over a tensor's rows one at a time, where the work between the
training steps goes (an evaluation written as `for i in range(len(Xv)): q = enc(Xv[i:i + 1])`,
with no model.eval(), no DataLoader): every op in its body pays its per-call cost once a row.
Measured here, a kNN evaluation of 1,000 queries against 8,000 embeddings (enc on one row,
torch.cdist, topk, mode): 0.53 s a pass one row at a time, 0.03 s with the same ops on all rows
at once; the run 4.8 s -> 2.8 s, the same accuracy.

Read from the script's source at the samples' lines in the function the time is named for (or at
the script's top level): the innermost `for` around the line iterates over `range(n)` (or
`range(a, b)`: a step of one) or `enumerate(...)` and its body takes a row by the loop's index
(`X[i]`, `X[i:i + 1]`), or iterates a tensor and feeds each item as a batch of one
(`for r in records: model(r.unsqueeze(0))`). Said only where the samples name no library work of
their own (json, PIL, a file a row: not a tensor's). The gaps between steps, the work after the
last step and an inference script's model call are looked at so."""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from gpubottle.analysis.loop_source import dotted, loop_index, parsed
from gpubottle.analysis.stack_shares import is_statement
from gpubottle.analysis.stacks import Frame
from gpubottle.probes.sites import is_user_file, place

# Most of the gaps' samples (their function's frames) are inside the loop.
ROW_LOOP_MIN_SHARE = 0.5


@dataclass(frozen=True)
class RowLoop:
    site: str  # file:line of the loop's `for`
    text: str  # its header, as written
    share: float  # of the samples counted
    columns: bool = False  # its index takes columns (`logits[:, c]`), not rows


# itertools' pair makers over ranges: `for i, j in itertools.combinations(range(n), 2):` indexes
# two rows a pair (a ranking loss over every pair of a query's documents)
PAIR_MAKERS = ("combinations", "product", "permutations", "combinations_with_replacement")


def _pair_names(loop: ast.For) -> list[str]:
    """`i` and `j` of `for i, j in itertools.combinations(range(n), 2):` (or product(range(n),
    range(m)), permutations): both index rows; [] for any other loop."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(loop.target, ast.Tuple)
            and dotted(it.func).rsplit(".", 1)[-1] in PAIR_MAKERS and it.args):
        return []
    ranges = [a for a in it.args if isinstance(a, ast.Call) and isinstance(a.func, ast.Name)
              and a.func.id == "range"]
    return _target_names(loop) if ranges else []


def _one_row(index: ast.expr, name: str) -> bool:
    """`i` or `i:i + 1` (a row, or a batch of one); or `:, c` (a column: a term a class)."""
    if isinstance(index, ast.Name):
        return index.id == name
    if isinstance(index, ast.Tuple) and len(index.elts) >= 2 and any(
            isinstance(e, ast.Name) and e.id == name for e in index.elts) and all(
            (isinstance(e, ast.Name) and e.id == name) or _whole(e) for e in index.elts):
        return True
    if isinstance(index, ast.Slice) and index.step is None and isinstance(index.lower, ast.Name) \
            and index.lower.id == name and isinstance(index.upper, ast.BinOp) and \
            isinstance(index.upper.op, ast.Add):
        a, b = index.upper.left, index.upper.right
        return (isinstance(a, ast.Name) and a.id == name and isinstance(b, ast.Constant) and b.value == 1) \
            or (isinstance(b, ast.Name) and b.id == name and isinstance(a, ast.Constant) and a.value == 1)
    return False


def _whole(index: ast.expr) -> bool:
    """`:` (all of a dimension) or `...`."""
    return (isinstance(index, ast.Slice) and index.lower is None and index.upper is None
            and index.step is None) or (isinstance(index, ast.Constant) and index.value is Ellipsis)


def row_taken(node: ast.AST, name: str) -> bool:
    """`X[i]` or `X[i:i + 1]`: a row taken by the loop's index `name`."""
    return isinstance(node, ast.Subscript) and _one_row(node.slice, name)


def _takes_rows(loop: ast.For, name: str) -> bool:
    """A call in the body takes a row by the index (`enc(Xv[i:i + 1])`, `model(X[i])`), or is a
    method of one (`out[k].topk(5)`); or the body computes with rows (`(z[a] - z[b]).pow(2)`) or
    writes one (`xm[k] = lam * x[k] + ...`: a mixup row by row)."""
    for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, ast.BinOp) and (row_taken(node.left, name) or row_taken(node.right, name)):
            return True
        if isinstance(node, ast.Assign) and any(row_taken(t, name) for t in node.targets):
            return True
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and row_taken(node.func.value, name):
                return True
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if any(row_taken(s, name) for s in ast.walk(arg)):
                    return True
    return False


def _batch_of_one(node: ast.AST, name: str) -> bool:
    """`r.unsqueeze(0)`, `r[None]`, `r.view(1, -1)`, `r.reshape(1, ...)`: the loop's item made a
    batch of one row."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
        first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
        return isinstance(first, ast.Constant) and first.value is None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == name and node.args):
        return False
    a0 = node.args[0]
    one = isinstance(a0, ast.Constant) and a0.value in ((0,) if node.func.attr == "unsqueeze" else (1,))
    return node.func.attr in ("unsqueeze", "view", "reshape") and one


def _items_as_rows(loop: ast.For) -> bool:
    """`for r in records:` whose body feeds the item, made a batch of one, to a call: iterating a
    tensor gives its rows."""
    if not isinstance(loop.target, ast.Name) or isinstance(loop.iter, ast.Call):
        return False
    name = loop.target.id
    return any(isinstance(n, ast.Call) and any(_batch_of_one(x, name) for a in n.args for x in ast.walk(a))
               for n in ast.walk(ast.Module(body=loop.body, type_ignores=[])))


def _target_names(loop: ast.For) -> list[str]:
    """The names a `for` binds (`s, d` of `for s, d in edges:`)."""
    elts = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
    return [e.id for e in elts if isinstance(e, ast.Name)]


def _indexes_rows(loop: ast.For) -> bool:
    """Any loop whose items index rows in its body (`for s, d in edges: out[d] = out[d] + msg[s]`,
    `for i in idx.tolist(): ... h[i]`): read so inside a model's forward only, where a subscript is
    a tensor's (elsewhere `counts[w]` of `for w in words` is a dict's)."""
    if isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Attribute) and \
            loop.iter.func.attr in ("items", "keys", "values"):
        return False
    return any(_takes_rows(loop, name) for name in _target_names(loop))


def _loop_at(path: str, loop_line: int) -> ast.For | None:
    """The `for` at `loop_line` of `path`."""
    p = parsed(path)
    return next((n for n in ast.walk(p[1]) if isinstance(n, ast.For) and n.lineno == loop_line), None) \
        if p else None


@functools.lru_cache(maxsize=256)
def loop_span(path: str, loop_line: int) -> tuple[int, int] | None:
    """The first and last lines of the `for` at `loop_line` of `path`."""
    loop = _loop_at(path, loop_line)
    return (loop.lineno, loop.end_lineno or loop.lineno) if loop is not None else None


def writes_rows(path: str, loop_line: int) -> bool:
    """The loop whose `for` is at `loop_line` writes rows in place by its names (`out[d] = ...`,
    `out[d] += ...`)."""
    loop = _loop_at(path, loop_line)
    if loop is None:
        return False
    names = _target_names(loop)
    targets: list[ast.expr] = []
    for n in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(n, ast.Assign):
            targets += n.targets
        elif isinstance(n, ast.AugAssign):
            targets.append(n.target)
    return any(row_taken(t, name) for t in targets for name in names)


@functools.lru_cache(maxsize=256)
def row_loop_at(path: str, line: int, any_index: bool = False) -> tuple[int, str] | None:
    """The innermost loop around `line` that runs over rows one at a time: (its line, its header).
    `any_index`: also a loop over index values of any kind (_indexes_rows)."""
    p = parsed(path)
    if p is None:
        return None
    source, tree = p
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For) and n.body
             and n.body[0].lineno <= line <= (n.end_lineno or n.lineno)]
    lines = source.splitlines()
    for loop in sorted(loops, key=lambda n: -n.lineno):
        name = loop_index(loop, unit_step=True)
        if (name is not None and _takes_rows(loop, name)) or _items_as_rows(loop) or any(
                _takes_rows(loop, pair) for pair in _pair_names(loop)) or (any_index and _indexes_rows(loop)):
            return loop.lineno, lines[loop.lineno - 1].strip()
    return None


def takes_columns(path: str, loop_line: int) -> bool:
    """The loop whose `for` is at `loop_line` takes a column by its index (`logits[:, c]`)."""
    loop = _loop_at(path, loop_line)
    if loop is None:
        return False
    names = set(_target_names(loop))
    return any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple) and _one_row(n.slice, name)
               and not (isinstance(n.slice.elts[0], ast.Name) and n.slice.elts[0].id == name)
               for n in ast.walk(ast.Module(body=loop.body, type_ignores=[])) for name in names)


@functools.lru_cache(maxsize=256)
def inner_row_loop(path: str, line: int) -> bool:
    """`line` is inside a row loop (row_loop_at) that is not the training loop itself: its body
    calls no backward() or optimizer step (a loss summed a class at a time, `for c in range(C):
    loss = loss + F.binary_cross_entropy_with_logits(logits[:, c], ...)`, inside the step loop)."""
    found = row_loop_at(path, line)
    loop = _loop_at(path, found[0]) if found is not None else None
    return loop is not None and not any(
        isinstance(n, ast.Attribute) and n.attr in ("backward", "step")
        for n in ast.walk(ast.Module(body=loop.body, type_ignores=[])))


def row_loop(stacks: Sequence[Sequence[Frame]], function: str | None) -> RowLoop | None:
    """The row loop most of `stacks` are in, at their frames of `function` (the one the gaps are
    named for: the model's own forward beneath it is not where the loop is); None: at the script's
    top level (its `<module>` frame: a loop written there, not one in the model's forward)."""
    if not stacks:
        return None
    hits: dict[tuple[str, int], int] = {}
    texts: dict[tuple[str, int], str] = {}
    for st in stacks:
        f = (next((f for f in reversed(st) if f.name == function), None) if function
             else next((f for f in reversed(st) if f.name == "<module>" and is_user_file(f.file)), None))
        found = row_loop_at(f.file, f.line) if f is not None else None
        if f is not None and found is not None:
            key = (f.file, found[0])
            hits[key] = hits.get(key, 0) + 1
            texts[key] = found[1]
    if not hits:
        return None
    (file, line), n = max(hits.items(), key=lambda kv: kv[1])
    share = n / len(stacks)
    if share < ROW_LOOP_MIN_SHARE:
        return None
    return RowLoop(place(file, line), texts[(file, line)], round(share, 3), takes_columns(file, line))


def row_loop_named(stacks: Sequence[Sequence[Frame]], function: str, location: str) -> RowLoop | None:
    """The row loop of a piece of the loop's own code, as analysis/stack_users names it: a
    function (its frames in `stacks`), or a statement (`function` is its text) at `location`."""
    if not is_statement(function):
        return row_loop([st for st in stacks if any(f.name == function for f in st)], function)
    frame = next((f for st in stacks for f in st
                  if is_user_file(f.file) and place(f.file, f.line) == location), None)
    found = row_loop_at(frame.file, frame.line) if frame is not None else None
    return (RowLoop(place(frame.file, found[0]), found[1], 1.0, takes_columns(frame.file, found[0]))
            if frame is not None and found else None)
