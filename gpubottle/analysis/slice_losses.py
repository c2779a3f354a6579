"""A loss taken slice by slice of the model's output in a Python loop and summed for backward():
`for t in range(T): loss = loss + crit(logits[:, t, :], y[:, t])` (a sequence tagger's loss per
time step, a loss per output column). Each slice's backward writes a gradient as large as the
whole output (zeros around its slice) and autograd sums them: T full-size tensors a step, where
one loss over the whole tensor (`crit(logits.reshape(-1, V), y.reshape(-1))`, the same value
where each slice's loss is a mean over as many elements) writes one. Measured here, a GRU tagger's
32 x 128 x 2000 logits: 0.53 s a step as the loop (its backward 0.39 s), 0.09 s as one loss, the
same loss to five digits.

Read from the script's source forward from the model's call (its file and function): the names
its result flows into; a `for` over an index (`range`, `enumerate`) whose body adds to a name (`loss
+= ...`, `loss = loss + ...`, `losses.append(...)`) a value read from such a name at that index; and
that name flowing on to a `backward(` line. The loop may sit in a function of the same file the
output is passed to (`loss = seq_loss(logits, y)`), a method of one of its classes
(`self.seq_loss(logits, y)`), or the forward of a loss module of the file called on it
(`crit = SeqLoss()` ... `loss = crit(logits, y)`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gpubottle.analysis.loop_source import enclosing_def, loop_index, own_body, parsed, split_site

REACH = 60  # lines after the model's call looked at


@dataclass(frozen=True)
class Found:
    site: str  # file:line of the loop's `for`, as the model's site names its file
    header: str  # the loop's header, as written
    tensor: str  # the name sliced (`logits`)
    index: str  # the slice, as written (`logits[:, t, :]`)
    dim: int  # the dimension the loop's index takes
    function: str | None  # the function it sits in, where the output is passed to one
    call: str | None = None  # the function the slice is passed to (`crit`, `F.cross_entropy`)
    target: str | None = None  # the other name that call takes a slice of (`y` of `y[:, t]`)


def _sliced(node: ast.AST, names: set[str], var: str) -> ast.Subscript | None:
    """A subscript in `node` of one of `names` whose index reads the loop's variable."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id in names \
                and any(isinstance(n, ast.Name) and n.id == var for n in ast.walk(sub.slice)):
            return sub
    return None


def _dim(sub: ast.Subscript, var: str) -> int:
    if isinstance(sub.slice, ast.Tuple):
        return next((k for k, e in enumerate(sub.slice.elts)
                     if any(isinstance(n, ast.Name) and n.id == var for n in ast.walk(e))), 0)
    return 0


def _self_sum(target: ast.expr, value: ast.expr) -> bool:
    """`loss = loss + ...` (or `... + loss`)."""
    return isinstance(target, ast.Name) and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) \
        and any(isinstance(s, ast.Name) and s.id == target.id for s in (value.left, value.right))


def _accumulated(loop: ast.For, names: set[str], var: str) -> tuple[str, ast.Subscript] | None:
    """The name the loop's body adds to, and the slice it adds from."""
    for stmt in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        target, value = None, None
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) \
                and isinstance(stmt.target, ast.Name):
            target, value = stmt.target.id, stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and _self_sum(stmt.targets[0], stmt.value):
            target, value = ast.unparse(stmt.targets[0]), stmt.value
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(
                stmt.value.func, ast.Attribute) and stmt.value.func.attr == "append" and isinstance(
                    stmt.value.func.value, ast.Name):
            target, value = stmt.value.func.value.id, stmt.value
        sub = _sliced(value, names, var) if value is not None else None
        if target is not None and sub is not None:
            return target, sub
    return None


def _stmts_after(scope: ast.AST, line: int, end: int) -> list[ast.stmt]:
    """The scope's statements from `line` to `end`, at any depth (a loop's body too), in order; a
    nested function's own statements left out."""
    out = [n for n in own_body(scope) if isinstance(n, ast.stmt) and line < n.lineno <= end]
    return sorted(out, key=lambda n: n.lineno)


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _assigned(stmt: ast.stmt) -> set[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
        stmt, (ast.AugAssign, ast.AnnAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _backward(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
               for n in ast.walk(stmt))


def _loop_in(stmts: list[ast.stmt], flowing: set[str]) -> tuple[ast.For, str, ast.Subscript, int] | None:
    """The first loop among `stmts` adding up slices of `flowing` names, with what it adds to and
    where it ends; `flowing` grows with the assignments on the way."""
    for stmt in stmts:
        if isinstance(stmt, ast.For):
            var = loop_index(stmt)
            acc = _accumulated(stmt, flowing, var) if var else None
            if acc is not None and var is not None:
                return stmt, acc[0], acc[1], stmt.end_lineno or stmt.lineno
        elif isinstance(stmt, ast.Assign) and _reads(stmt.value) & flowing:
            flowing |= _assigned(stmt)
    return None


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == name), None)


def _instance_of(tree: ast.Module, classes: list[ast.ClassDef], expr: ast.expr) -> ast.ClassDef | None:
    """The class of the file `expr` (`crit`, `self.crit`) is assigned an instance of, where the
    file says (`crit = SeqLoss()`, `SeqLoss().to(dev)`, `model, crit = Net(), SeqLoss()` too)."""
    called = ast.unparse(expr)
    for made in (v for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
                 for name, v in _pairs(t, node.value) if ast.unparse(name) == called):
        while isinstance(made, ast.Call) and isinstance(made.func, ast.Attribute):  # SeqLoss().to(dev)
            made = made.func.value
        if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
            cls = next((c for c in classes if c.name == made.func.id), None)
            if cls is not None:
                return cls
    return None


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """Each name an assignment binds with the value it takes, where the file says (`a, b = x, y`)."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return [p for t, v in zip(target.elts, value.elts) for p in _pairs(t, v)]
    return [(target, value)]


def _callee(tree: ast.Module, func: ast.expr) -> tuple[ast.FunctionDef, str, int] | None:
    """The function of the file a call runs, its name as the fix says it, and how many of its
    first parameters the call's arguments skip (a method's self): a function of the file
    (`seq_loss(...)`), a method of an instance of one of its classes (`crit.forward(...)` where
    `crit = SeqLoss()`), a method only one of its classes has (`self.seq_loss(...)`), or an
    instance of one of them called (`crit(...)`: its forward, or __call__)."""
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    if isinstance(func, ast.Name):
        f = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == func.id), None)
        if f is not None:
            return f, f.name, 0
    elif isinstance(func, ast.Attribute):
        # The instance's own class first: forward is every module's, so one class having it says
        # nothing of which one `crit.forward` runs.
        owner = _instance_of(tree, classes, func.value)
        m = _method(owner, func.attr) if owner is not None else None
        found = [(owner, m)] if owner is not None and m is not None else [
            (c, m) for c in classes if (m := _method(c, func.attr)) is not None]
        if len(found) == 1:
            c, m = found[0]
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in m.decorator_list)
            return m, f"{c.name}.{m.name}", 0 if static else 1
    cls = _instance_of(tree, classes, func)
    m = (_method(cls, "forward") or _method(cls, "__call__")) if cls is not None else None
    return (m, f"{cls.name}.{m.name}", 1) if cls is not None and m is not None else None


def _helper(tree: ast.Module, call: ast.Call,
            flowing: set[str]) -> tuple[ast.FunctionDef, str, set[str]] | None:
    """A function of the file the statement's call passes a flowing name to, its name, and its
    parameters that take them."""
    callee = _callee(tree, call.func)
    if callee is None:
        return None
    func, name, skip = callee
    params = [a.arg for a in func.args.args][skip:]
    took = {params[k] for k, a in enumerate(call.args)
            if k < len(params) and isinstance(a, ast.Name) and a.id in flowing}
    took |= {k.arg for k in call.keywords if k.arg is not None and k.arg in params
             and isinstance(k.value, ast.Name) and k.value.id in flowing}
    return (func, name, took) if took else None


def _through_callee(tree: ast.Module, after: list[ast.stmt],
                    flowing: set[str]) -> tuple[ast.For, ast.Subscript, str, set[str], int] | None:
    """Where the output is passed to a function of the file that holds the loop and returns its
    sum: the loop, its slice, the function's name, the names the result is assigned to, and the
    calling statement's line."""
    for stmt in after:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            helper = _helper(tree, stmt.value, flowing)
            inner = _loop_in(_stmts_after(helper[0], helper[0].lineno, helper[0].end_lineno or 0),
                             set(helper[2])) if helper is not None else None
            if helper is not None and inner is not None and any(
                    isinstance(r, ast.Return) and r.value is not None and inner[1] in _reads(r.value)
                    for r in ast.walk(helper[0])):
                return inner[0], inner[2], helper[1], _assigned(stmt), stmt.lineno
        if isinstance(stmt, ast.Assign) and _reads(stmt.value) & flowing:
            flowing |= _assigned(stmt)
    return None


def _found(site: str, loop: ast.For, sub: ast.Subscript, function: str | None) -> Found:
    assert isinstance(sub.value, ast.Name)
    called = next((c for c in ast.walk(loop) if isinstance(c, ast.Call) and any(a is sub for a in c.args)),
                  None)
    target = next((a.value.id for a in called.args if a is not sub and isinstance(a, ast.Subscript)
                   and isinstance(a.value, ast.Name)), None) if called is not None else None
    return Found(f"{site.rsplit(':', 1)[0]}:{loop.lineno}",
                 f"for {ast.unparse(loop.target)} in {ast.unparse(loop.iter)}:",
                 sub.value.id, ast.unparse(sub), _dim(sub, loop_index(loop) or ""), function,
                 ast.unparse(called.func) if called is not None else None, target)


def slice_loss(site: str | None, cwd: str | None) -> Found | None:
    """The loop adding up a loss slice by slice of what the model's call at `site` returned, where
    the sum reaches backward(); None where there is none, or the source cannot be read."""
    at = split_site(site, cwd)
    p = parsed(at[0]) if at is not None else None
    if at is None or p is None or site is None:
        return None
    tree, line = p[1], at[1]
    scope: ast.AST = enclosing_def(tree, line) or tree
    call_stmt = next((s for s in _stmts_after(scope, line - 1, line) if s.lineno == line), None)
    if not isinstance(call_stmt, (ast.Assign, ast.AnnAssign)):
        return None
    flowing = _assigned(call_stmt)
    after = _stmts_after(scope, line, line + REACH)
    here = _loop_in(after, set(flowing))
    function: str | None = None
    if here is not None:
        loop, acc, sub, end = here
        reaching = {acc}
    else:
        through = _through_callee(tree, after, set(flowing))
        if through is None:
            return None
        loop, sub, function, reaching, end = through
    for stmt in (s for s in after if s.lineno > end):
        if _reads(stmt) & reaching:
            if _backward(stmt):
                return _found(site, loop, sub, function)
            reaching |= _assigned(stmt)
    return None
