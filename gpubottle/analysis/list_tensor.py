"""Whether a line builds a tensor from a Python list (`torch.tensor(xs)` where `xs = [b[0] for b in
batch]`): torch reads such a list one value at a time, each through Python's number protocol, where
one array is copied whole. Measured here (a batch of 128 float32 arrays of 256 values): 3.2 ms as
torch.tensor(list of arrays), 0.05 ms as torch.from_numpy(np.stack(list)); a list of 32,768 Python
floats 3.6 ms, 0.6 ms through np.array. A collate written so took the whole of making each batch.

Read from the script's source at the sample's line (py-spy gives it; torch.tensor is C, so the
user's line is the sample's innermost frame): the call's argument is a list display or
comprehension, `list(...)`, or a name the same function binds to one or appends to. An array or a
tensor passed whole is not (one copy, not a value at a time)."""

from __future__ import annotations

import ast
import functools

from gpubottle.analysis.loop_source import parent_map, parsed

# torch's constructors that take nested sequences (torch.Tensor and its typed forms read them alike)
_BUILDERS = {"tensor", "as_tensor", "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor",
             "IntTensor", "ShortTensor", "ByteTensor", "BoolTensor"}


def _scope(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function holding `line` (the module where none does)."""
    best: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno) and \
                (best is tree or node.lineno > getattr(best, "lineno", 0)):
            best = node
    return best


def _a_list(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.ListComp)) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "list")


def _appended(node: ast.AST) -> str | None:
    """The name `node` appends to or extends (`rows` of `rows.append(row)`); None for any other node."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name):
        return node.func.value.id
    return None


def _bound_to_list(scope: ast.AST, name: str) -> bool:
    """`name` is bound in `scope` to a list (display, comprehension, list(...)) or appended to."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and _a_list(node.value) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
        if _appended(node) == name:
            return True
    return False


@functools.lru_cache(maxsize=256)
def list_tensor_arg(path: str, line: int) -> str | None:
    """The source of the list that a torch.tensor(...) call (or as_tensor, torch.FloatTensor, ...)
    at path:line builds a tensor from; None where the line makes no such call (or is unreadable)."""
    p = parsed(path)
    if p is None:
        return None
    source, tree = p
    scope = _scope(tree, line)
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Call) and node.args and node.lineno <= line <= (node.end_lineno or 0)):
            continue
        f = node.func
        if not (isinstance(f, ast.Attribute) and f.attr in _BUILDERS and isinstance(f.value, ast.Name)
                and f.value.id == "torch"):
            continue
        arg = node.args[0]
        if _a_list(arg) or (isinstance(arg, ast.Name) and _bound_to_list(scope, arg.id)):
            return ast.get_source_segment(source, arg) or ast.unparse(arg)
    return None


def _builder_calls(scope: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(scope) if isinstance(n, ast.Call) and n.args
            and isinstance(n.func, ast.Attribute) and n.func.attr in _BUILDERS
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch"]


def _fed_lists(scope: ast.AST, calls: list[ast.Call]) -> set[str]:
    """The names of the lists whose values a builder call in `scope` reads: its argument's name,
    and the names appended to those (`row` in `rows.append(row)`), as far as they go."""
    fed = {c.args[0].id for c in calls
           if isinstance(c.args[0], ast.Name) and _bound_to_list(scope, c.args[0].id)}
    grew = True
    while grew:
        grew = False
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and _appended(node) in fed and node.args and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id not in fed:
                fed.add(node.args[0].id)
                grew = True
    return fed


def _appends_to(node: ast.AST, names: set[str]) -> bool:
    return any(_appended(n) in names for n in ast.walk(node))


@functools.lru_cache(maxsize=256)
def values_loop(path: str, line: int) -> tuple[int, str] | None:
    """Where a function makes a tensor's values one at a time in Python, the tensor built from them
    by torch.tensor at the end (a sinusoidal timestep embedding as `for t in ts.tolist(): for i in
    range(half): row.append(math.sin(t * f(i)))`, then `torch.tensor(rows)`; a mask as
    `torch.tensor([[j > i for j in range(T)] for i in range(T)])`): (line, text) of the `for` that
    fills the lists (the outermost one in the function), or of the call where a comprehension in
    its argument makes them, for a sample at `line` inside either (or on the call that reads them).
    Each value costs Python's interpreter and then torch's number protocol, where tensor ops on
    whole ranges make them all at once. None elsewhere, and outside functions."""
    p = parsed(path)
    if p is None:
        return None
    source, tree = p
    scope = _scope(tree, line)
    if scope is tree:
        return None
    lines = source.splitlines()
    calls = _builder_calls(scope)
    for call in calls:
        arg = call.args[0]
        made_here = isinstance(arg, (ast.ListComp, ast.GeneratorExp)) or (
            isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "list"
            and arg.args and isinstance(arg.args[0], ast.GeneratorExp))
        if made_here and call.lineno <= line <= (call.end_lineno or call.lineno):
            return call.lineno, lines[call.lineno - 1].strip()
    fed = _fed_lists(scope, calls)
    if not fed:
        return None
    parents = parent_map(scope)
    on_call = any(c.lineno <= line <= (c.end_lineno or c.lineno) for c in calls
                  if isinstance(c.args[0], ast.Name) and c.args[0].id in fed)
    outer: ast.For | ast.AsyncFor | None = None
    for node in ast.walk(scope):
        if not isinstance(node, (ast.For, ast.AsyncFor)) or not _appends_to(node, fed):
            continue
        if not on_call and not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        up = parents.get(id(node))  # (the outermost such loop: its header names the whole fill)
        while up is not None and up is not scope and not isinstance(up, (ast.For, ast.AsyncFor)):
            up = parents.get(id(up))
        outermost = up is None or up is scope or not _appends_to(up, fed)
        if outermost and (outer is None or node.lineno < outer.lineno):
            outer = node
    if outer is None:
        return None
    return outer.lineno, lines[outer.lineno - 1].strip()


_PER_VALUE_MODULES = ("math", "np", "numpy", "random")


@functools.lru_cache(maxsize=256)
def per_value(path: str, line: int) -> str | None:
    """What makes each value in the loop or comprehension starting at `line` (values_loop's line):
    the calls of math's (numpy's, random's) functions it makes, in order of first use ("math.exp,
    math.sin, math.cos"); else "comparisons" where it compares (a mask); else None."""
    p = parsed(path)
    if p is None:
        return None
    _source, tree = p
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.Call))
                 and n.lineno == line), None)
    if node is None:
        return None
    calls: list[str] = []
    compares = False
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                isinstance(n.func.value, ast.Name) and n.func.value.id in _PER_VALUE_MODULES:
            name = f"{n.func.value.id}.{n.func.attr}"
            if name not in calls:
                calls.append(name)
        compares = compares or isinstance(n, ast.Compare)
    if calls:
        return ", ".join(calls[:4])
    return "comparisons" if compares else None
