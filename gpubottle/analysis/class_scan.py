"""A dataset that finds, for each sample, the indices of its class (or of another) by scanning
every label it holds: `[j for j in range(len(self.labels)) if self.labels[j] == y]`,
`np.where(self.labels != y)[0]` in __getitem__ (a siamese pair's positive, a triplet's negative).
Each sample pays a pass over the whole dataset; the indices by class, made once in __init__, make
it a lookup. Measured here: 60,000 labels scanned by a comprehension a sample, 60 batches of 64 in
6.7 s against 2.1 s by class (the script run whole); 400,000 by np.where twice a sample, 6.2 s
against 2.3 s.

Read from the source of the sample's line, in a method: a comparison (== or !=) of a value of
self's attributes (its items, in a comprehension over them or over range(len(...)) of them; or
the whole array, in np.where / np.flatnonzero / np.nonzero / torch.where / .nonzero()) with a
value of the method's own (a local or a parameter)."""

from __future__ import annotations

import ast
import functools

from gpubottle.analysis.loop_source import call_name, enclosing_def, parsed

_WHERE = ("where", "flatnonzero", "nonzero", "argwhere")


def _of_self(node: ast.AST) -> bool:
    """`self.x`, `self.x[j]`, `self.x.labels`: a value the dataset holds."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return True
        node = node.value
    return False


def _whole(node: ast.AST) -> bool:
    """`self.labels`, `self.ds.labels`: all of a value the dataset holds (not `self.rows[i]`, a
    sample's own)."""
    while isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return True
        node = node.value
    return False


def _local(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _label_test(node: ast.AST, names: set[str], item: set[str], whole: bool = False) -> bool:
    """`self.labels[j] == y` (or `l != y` with l an item of self's; `whole`: `self.labels == y`,
    all of it): of self's against a local."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1
            and isinstance(node.ops[0], ast.Eq | ast.NotEq)):
        return False
    a, b = node.left, node.comparators[0]

    def mine(n: ast.AST) -> bool:
        return _whole(n) if whole else _of_self(n) or (isinstance(n, ast.Name) and n.id in item)

    return (mine(a) and _local(b, names)) or (mine(b) and _local(a, names))


def _scans(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        for gen in node.generators:
            over = gen.iter
            whole = _whole(over) or (
                isinstance(over, ast.Call) and call_name(over.func) in ("range", "enumerate", "zip")
                and any(_whole(a) or (isinstance(a, ast.Call) and call_name(a.func) == "len"
                                      and any(_whole(b) for b in a.args)) for a in over.args))
            item = {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            if whole and any(_label_test(c, names, item) for cond in gen.ifs for c in ast.walk(cond)):
                return True
    if isinstance(node, ast.Call) and call_name(node.func) in _WHERE:
        tested = list(node.args[:1]) or ([node.func.value] if isinstance(node.func, ast.Attribute) else [])
        return any(_label_test(t, names, set(), whole=True) for a in tested for t in ast.walk(a))
    return False


@functools.lru_cache(maxsize=256)
def class_scan(path: str, line: int) -> bool:
    """Whether `line` of `path` scans every label self holds for those of a sample's class."""
    p = parsed(path)
    if p is None:
        return False
    fn = enclosing_def(p[1], line)
    if fn is None or not fn.args.args or fn.args.args[0].arg != "self":
        return False
    names = {a.arg for a in fn.args.args[1:]} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return any(_scans(n, names) for stmt in ast.walk(fn) if isinstance(stmt, ast.stmt)
               and stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) and not isinstance(
                   stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.While, ast.If, ast.With))
               for n in ast.walk(stmt))
