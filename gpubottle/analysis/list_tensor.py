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

from gpubottle.analysis.loop_source import parsed

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


def _bound_to_list(scope: ast.AST, name: str) -> bool:
    """`name` is bound in `scope` to a list (display, comprehension, list(...)) or appended to."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and _a_list(node.value) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name) and \
                node.func.value.id == name:
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
