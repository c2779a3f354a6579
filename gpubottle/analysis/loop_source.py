"""What the loop's own source lines say about a helper it calls: whether the helper's result feeds
the model (`x, y = mix_rows(x, y)`, then `loss = crit(model(x), y)` and `loss.backward()`). Such a
helper is part of making each batch: calling it every N steps would train on batches it never
touched, so the fix for its cost is to make it cheaper or move it into the loader's workers, not to
call it less often.

Read a line at a time (py-spy gives the line a frame is at): the statements on it from the file's
parse, a statement spread over several lines whole from any of them, each of `x = f(a); y = g(b)`
(a file that does not parse: the line alone, where it parses alone; else nothing, never a guess)."""

from __future__ import annotations

import ast
import functools
import linecache
import os
from collections.abc import Iterable, Iterator


def split_site(site: str | None, cwd: str | None) -> tuple[str, int] | None:
    """A "file:line" site as (its file, relative to the run's folder `cwd` unless absolute, line);
    None where it says no line."""
    if not site or ":" not in site:
        return None
    path, _, line = site.rpartition(":")
    if not line.isdigit():
        return None
    return (path if os.path.isabs(path) else os.path.join(cwd or "", path)), int(line)

def _alone(path: str, line: int) -> list[ast.stmt]:
    text = linecache.getline(path, line).strip()
    if not text:
        return []
    try:
        return ast.parse(text).body
    except SyntaxError:
        return []


def _statements(path: str, line: int) -> list[ast.stmt]:
    """The simple statements on path:line, from the whole file's parse: the one a line of a
    multi-line statement belongs to, each of `a = f(); b = g()`. A compound statement's own line
    (`for x in loader:`, `if ...:`) gives none: it assigns and reads in ways a line cannot say."""
    tree = _module(path)
    if tree is None:
        return _alone(path, line)
    out: list[ast.stmt] = []
    todo: list[ast.AST] = [tree]
    while todo:
        for child in ast.iter_child_nodes(todo.pop()):
            lo = getattr(child, "lineno", None)
            if lo is None:
                if isinstance(child, ast.match_case):
                    todo.append(child)  # (a match's cases have no line of their own)
                continue
            if not lo <= line <= (getattr(child, "end_lineno", None) or lo):
                continue
            if hasattr(child, "body"):  # compound: a statement of its body may be on the line
                todo.append(child)
            elif isinstance(child, ast.stmt):
                out.append(child)
    return out


def assigned_names(path: str, line: int) -> set[str]:
    """The names the statements at path:line assign (`x, y = f(x, y)`: x and y); empty for a call
    whose result is dropped (`tracker.log(step, loss)`) or a line that tells nothing."""
    out: set[str] = set()
    for stmt in _statements(path, line):
        if isinstance(stmt, ast.Assign):
            targets: list[ast.expr] = list(stmt.targets)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets = [stmt.target]
        else:
            continue
        out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def passed_to_calls(path: str, line: int) -> set[str]:
    """The names the statements pass as arguments of a call (`loss = crit(model(x), y)`: x, y;
    `loss.backward()`: none)."""
    out: set[str] = set()
    for stmt in _statements(path, line):
        for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                out |= {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
    return out


def accumulates(path: str, line: int) -> bool:
    """The statement at path:line adds its value to a running total or list (`correct += f(...)`,
    `preds.append(f(...))`, `.extend(...)`): a call made less often would leave steps out of it."""
    for stmt in _statements(path, line):
        if isinstance(stmt, ast.AugAssign):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(
                stmt.value.func, ast.Attribute) and stmt.value.func.attr in ("append", "extend"):
            return True
    return False


def names_read(path: str, line: int) -> set[str]:
    """The names the statements at path:line read (`loss = crit(model(x), y)`: crit, model, x, y)."""
    return {n.id for stmt in _statements(path, line) for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


MODEL = "model"  # what the helper returns flows into a call of the model: the batch it trains on
BACKWARD = "backward"  # only into a backward(): the loss, computed from the model's output


def _inside_a_call(text: str, helper: str) -> bool:
    """`helper(` on the line sits inside another call's parentheses (model(helper(x)))."""
    at = text.find(helper.rsplit(".", 1)[-1] + "(")
    return at > 0 and text[:at].count("(") > text[:at].count(")")


def flows_into(call: tuple[str, int], model_calls: Iterable[tuple[str, int]], reach: int = 80,
               helper: str | None = None) -> str | None:
    """Where the names the helper's call at `call` assigns flow, through the loop's next single-line
    assignments (`out = model(x)`, `loss = crit(out, y)`): MODEL, into a call of the model the
    stacks saw (`model_calls`), BACKWARD, into a `backward(` line first (a loss written by hand),
    else None. Read forward from the call, up to `reach` lines, until the code leaves the loop's
    function (or, at module level, the loop's body). `helper`: the function called, for a line that
    also calls the model (inside the model's parentheses, MODEL; around them, what follows decides)."""
    path, line = call
    calls = set(model_calls)
    if helper and (path, line) in calls and _inside_a_call(linecache.getline(path, line), helper):
        return MODEL  # out = model(augment(x)): its result is an argument of the model's call
    flowing = assigned_names(path, line)
    models = {n for p, n in calls if p == path and n > line}
    through_call = False
    indent = _indent(linecache.getline(path, line))
    for n in range(line + 1, line + reach + 1):
        text = linecache.getline(path, n)
        stripped = text.strip()
        if not flowing or not text:
            return None
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(("def ", "async def ", "class ")) or (indent and not _indent(text)):
            return None
        if names_read(path, n) & flowing:
            if n in models:
                return MODEL
            if "backward(" in stripped:
                # The loss only where nothing on the way took it as an argument: a call it went
                # through (`crit(model(x), y)` on a line the stacks never caught) may be the model's.
                return MODEL if through_call else BACKWARD
            through_call = through_call or bool(passed_to_calls(path, n) & flowing)
            flowing |= assigned_names(path, n)
    return None


def reads_model_output(site: tuple[str, int], model_calls: Iterable[tuple[str, int]],
                       reach: int = 40) -> bool:
    """The statement at `site` reads, through the loop's assignments since, what a call of the
    model above it returned (`logits = policy(s)`, `dist = Categorical(logits=logits)`, then `a =
    dist.sample()`): it needs that step's output, so it cannot be made ahead of the step (in a
    DataLoader's workers). Read forward from each model call above it, up to `reach` lines, within
    the call's block."""
    path, line = site
    for p, n in model_calls:
        if p != path or not 0 < line - n <= reach:
            continue
        flowing = assigned_names(path, n)
        indent = _indent(linecache.getline(path, n))
        for k in range(n + 1, line + 1):
            text = linecache.getline(path, k)
            if not flowing or not text:
                break
            if not text.strip() or text.strip().startswith("#"):
                continue
            if _indent(text) < indent:
                break  # (out of the model call's block: another iteration's, or the function's end)
            if names_read(path, k) & flowing:
                if k == line:
                    return True
                flowing |= assigned_names(path, k)
    return False


def to_backward(site: tuple[str, int]) -> bool:
    """What the line at `site` computes reaches backward(): on the line itself, or through the
    loop's next assignments (flows_into)."""
    path, line = site
    return "backward(" in linecache.getline(path, line) or flows_into(site, ()) == BACKWARD


def feeds_back(site: tuple[str, int], reach: int = 40) -> bool:
    """The model's call at `site` takes, from the loop around it, what a later line of that loop
    made from the call's own output (`s, r, done = env.step(a.item())` after `logits = policy(s)`:
    an agent; a sampler feeding back its draw): each call waits on the one before, so its calls
    cannot be made one call on their batch. The call's output followed forward as
    reads_model_output does, within the call's block and its loop's, up to `reach` lines."""
    path, line = site
    text = linecache.getline(path, line)
    if not text or enclosing_header(path, line) is None:
        return False
    inputs = names_read(path, line)
    flowing = assigned_names(path, line)
    floor = _indent(text)  # (inside its loop's block, deeper than the loop's header)
    for k in range(line + 1, line + reach + 1):
        after = linecache.getline(path, k)
        if not flowing or not after:
            break
        if not after.strip() or after.strip().startswith("#"):
            continue
        if _indent(after) < floor:
            break  # (the call's block ends, and with it the loop's)
        if names_read(path, k) & flowing:
            if assigned_names(path, k) & inputs:
                return True
            flowing |= assigned_names(path, k)
    return False


def grads_per_call(site: tuple[str, int]) -> bool:
    """The innermost `for` around the model's call at `site` also takes gradients in its body
    (`torch.autograd.grad(loss, params)`, `loss.backward()`): gradients one sample at a time, which
    the loop needs apart (each clipped, as DP-SGD does, or each's norm): one batched loss would
    give their sum, not them."""
    tree = _module(site[0])
    loop = innermost(tree, site[1], (ast.For, ast.While)) if tree is not None else None
    return isinstance(loop, (ast.For, ast.While)) and any(
        isinstance(n, ast.Call) and call_name(n.func) in ("grad", "backward")
        for n in ast.walk(ast.Module(body=loop.body, type_ignores=[])))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def enclosing_header(path: str, line: int, starts: tuple[str, ...] = ("for ", "while "),
                     reach: int = 60) -> int | None:
    """The line of the nearest less-indented statement above `line` that starts with one of
    `starts` (a loop's header), looking through the blocks between (an `if`, a `with`, or a loop
    not in `starts`) but not out of the function or class; None where there is none within
    `reach` lines. Read from the text, as a stack sample's line is."""
    indent = _indent(linecache.getline(path, line))
    for n in range(line - 1, max(0, line - reach), -1):
        above = linecache.getline(path, n)
        if not above.strip() or _indent(above) >= indent:
            continue
        head = above.lstrip()
        if head.startswith(starts):
            return n
        if head.startswith(("def ", "async def ", "class ")):
            return None
        indent = _indent(above)
    return None


@functools.lru_cache(maxsize=32)
def parsed(path: str) -> tuple[str, ast.Module] | None:
    """A file's source and its parse, read once (each line the stacks name asks again); None where
    it does not parse."""
    source = "".join(linecache.getlines(path))
    try:
        return source, ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent, by the child's id (ast nodes do not know theirs)."""
    return {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}


def assignments(tree: ast.Module) -> list[tuple[str, ast.AST | None]]:
    """(target as written, value) for each plain assignment in the file, in source order."""
    out: list[tuple[str, ast.AST | None]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr]
        value: ast.expr | None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        for t in targets:
            if isinstance(t, (ast.Name, ast.Attribute)) and dotted(t):
                out.append((dotted(t), value))
            elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                    and len(t.elts) == len(value.elts):  # (`self.vocab, self.texts = vocab, texts`)
                out.extend((dotted(e), v) for e, v in zip(t.elts, value.elts, strict=True)
                           if isinstance(e, (ast.Name, ast.Attribute)) and dotted(e))
    out.sort(key=lambda b: getattr(b[1], "lineno", 0))
    return out


def parsed_files(files: Iterable[str | None], cwd: str | None) -> Iterator[tuple[str, ast.Module]]:
    """Each distinct .py file of `files` (as the report names them, relative to `cwd`) that parses,
    with its tree: the script and the file of the model's call, read for what they ask of torch."""
    seen: set[str] = set()
    for file in files:
        if not file or file in seen or not file.endswith(".py"):
            continue
        seen.add(file)
        found = parsed(os.path.join(cwd or "", file))
        if found is not None:
            yield file, found[1]


def first_naming(files: Iterable[str | None], cwd: str | None, names: tuple[str, ...]) -> str | None:
    """`file:line` of the first line of code in `files` naming one of `names` (an attribute or a
    name: torch.channels_last, pack_padded_sequence; not a comment or a docstring), None where none
    does."""
    for file, tree in parsed_files(files, cwd):
        lines = [n.lineno for n in ast.walk(tree)
                 if (isinstance(n, ast.Attribute) and n.attr in names)
                 or (isinstance(n, ast.Name) and n.id in names)]
        if lines:
            return f"{file}:{min(lines)}"
    return None


def _module(path: str) -> ast.Module | None:
    p = parsed(path)
    return p[1] if p is not None else None


def own_body(scope: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function's (or module's) own code, not those of the functions it defines."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def innermost(tree: ast.AST, line: int, kinds: tuple[type[ast.stmt], ...]) -> ast.stmt | None:
    """The innermost statement of one of `kinds` whose lines hold `line`, None where none does."""
    found: ast.stmt | None = None
    for node in ast.walk(tree):
        if (isinstance(node, kinds) and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (found is None or node.lineno >= found.lineno)):
            found = node
    return found


def enclosing_def(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost def around `line`, None at a module's own level."""
    found = innermost(tree, line, (ast.FunctionDef, ast.AsyncFunctionDef))
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def loop_index(loop: ast.For, *, unit_step: bool = False) -> str | None:
    """The loop's index: `i` of `for i in range(...)` or `for i, x in enumerate(...)`; unit_step
    leaves out a range with a step (`range(0, n, 64)` takes batches, not rows) and calls with
    keywords (`enumerate(xs, start=1)`)."""
    it = loop.iter
    if not isinstance(it, ast.Call) or not isinstance(it.func, ast.Name) or (unit_step and it.keywords):
        return None
    if it.func.id == "range" and isinstance(loop.target, ast.Name) and (not unit_step or len(it.args) <= 2):
        return loop.target.id
    if it.func.id == "enumerate" and isinstance(loop.target, ast.Tuple) and loop.target.elts and \
            isinstance(loop.target.elts[0], ast.Name):
        return loop.target.elts[0].id
    return None


def dotted(node: ast.expr) -> str:
    """`torch.jit.script` for that attribute chain, `out` for a name; '' for any other expression."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(parts)])


def call_name(func: ast.expr) -> str:
    """The name a call is made by: `f` for f(...), `m` for x.m(...); '' for any other callee."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def trains_beside(path: str, line: int) -> bool:
    """The function holding path:line (or the module) also calls `.backward(` in its own code: the
    line is inside the training loop's own function (an evaluation written inline in the loop),
    not in a helper the loop calls."""
    tree = _module(path)
    if tree is None:
        return False
    scope: ast.AST = enclosing_def(tree, line) or tree
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
               for n in own_body(scope))
