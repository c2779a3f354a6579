"""Code of the script's that computes with its parameters directly: a model written as tensors
(`W1 = torch.randn(512, 1024).requires_grad_()`, `b = nn.Parameter(...)`, the optimizer given
`[W1, b1, W2]`) and a function or line of the loop reading them (`h = torch.relu(x @ W1 + b1)`).
No nn.Module call holds that forward, so its samples fall outside the model's phases; read as the
loop's own code, it was told to be made cheaper as "the loss backward() trains on" or called less
often. Such code is the model's: the loop's readings leave it out.

Read from the source: names bound to a tensor that requires grad (requires_grad=True,
.requires_grad_(), nn.Parameter) or listed in an optimizer's parameters (torch.optim.X([W1, b1])
or a list name passed there).
"""

from __future__ import annotations

import ast
import functools

from gpubottle.analysis.loop_source import assignments, call_name, dotted, enclosing_def, names_read, parsed


def _requires_grad(value: ast.AST) -> bool:
    for n in ast.walk(value):
        if isinstance(n, ast.Call):
            if call_name(n.func) in ("requires_grad_", "Parameter"):
                return True
            if any(k.arg == "requires_grad" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                   for k in n.keywords):
                return True
    return False


def _optimizer_names(tree: ast.Module, lists: dict[str, list[str]]) -> set[str]:
    """The names in a torch.optim optimizer's first argument: a list or tuple of names, or a name
    bound to one."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and ".optim." in f".{dotted(n.func)}." and n.args:
            first = n.args[0]
            if isinstance(first, (ast.List, ast.Tuple)):
                out |= {dotted(e) for e in first.elts if dotted(e)}
            elif isinstance(first, ast.Name):
                out |= set(lists.get(first.id, ()))
    return out


@functools.lru_cache(maxsize=64)
def parameter_names(path: str) -> frozenset[str]:
    p = parsed(path)
    if p is None:
        return frozenset()
    names: set[str] = set()
    lists: dict[str, list[str]] = {}
    for target, value in assignments(p[1]):
        if value is not None and _requires_grad(value):
            names.add(target)
        if isinstance(value, (ast.List, ast.Tuple)):
            lists[target] = [dotted(e) for e in value.elts if dotted(e)]
    return frozenset(names | _optimizer_names(p[1], lists))


@functools.lru_cache(maxsize=256)
def reads_parameters(path: str, line: int, function: bool = False) -> bool:
    """The statement at `line` of `path` reads one of the script's parameter tensors; with
    `function`, any line of the function holding it does."""
    params = parameter_names(path)
    if not params:
        return False
    if not function:
        return bool(names_read(path, line) & params)
    p = parsed(path)
    at = enclosing_def(p[1], line) if p is not None else None
    if at is None:
        return False
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in params
               for n in ast.walk(at))
