"""What the loop's own source lines say about a helper it calls: whether the helper's result feeds
the model (`x, y = mix_rows(x, y)`, then `loss = crit(model(x), y)` and `loss.backward()`). Such a
helper is part of making each batch: calling it every N steps would train on batches it never
touched, so the fix for its cost is to make it cheaper or move it into the loader's workers, not to
call it less often.

Read one line at a time (py-spy gives the line a frame is at); a statement spread over several lines
does not parse alone and tells nothing (never a guess)."""

from __future__ import annotations

import ast
import linecache
from collections.abc import Iterable


def _statement(path: str, line: int) -> ast.stmt | None:
    text = linecache.getline(path, line).strip()
    if not text:
        return None
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def assigned_names(path: str, line: int) -> set[str]:
    """The names the statement at path:line assigns (`x, y = f(x, y)`: x and y); empty for a call
    whose result is dropped (`tracker.log(step, loss)`) or a line that does not parse alone."""
    stmt = _statement(path, line)
    if isinstance(stmt, ast.Assign):
        targets: list[ast.expr] = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def names_read(path: str, line: int) -> set[str]:
    """The names the statement at path:line reads (`loss = crit(model(x), y)`: crit, model, x, y)."""
    stmt = _statement(path, line)
    if stmt is None:
        return set()
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def feeds_model(call: tuple[str, int], model_calls: Iterable[tuple[str, int]], reach: int = 80) -> bool:
    """The helper's call at `call` assigns names that flow, through the loop's next single-line
    assignments (`out = model(x)`, `loss = crit(out, y)`), into a call of the model the stacks saw
    (`model_calls`) or into a `backward(` line: the step trains on what it returns. Read forward from
    the call, up to `reach` lines, until the code leaves the loop's function (or, at module level,
    the loop's body)."""
    path, line = call
    flowing = assigned_names(path, line)
    models = {n for p, n in model_calls if p == path and n > line}
    indent = _indent(linecache.getline(path, line))
    for n in range(line + 1, line + reach + 1):
        text = linecache.getline(path, n)
        stripped = text.strip()
        if not flowing or not text:
            return False
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(("def ", "async def ", "class ")) or (indent and not _indent(text)):
            return False
        if names_read(path, n) & flowing:
            if n in models or "backward(" in stripped:
                return True
            flowing |= assigned_names(path, n)
    return False


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())
