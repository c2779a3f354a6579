"""Loops in the model's own forward (probes/inner_calls.py): a submodule called once per sample
of the batch, and an RNN cell stepped over a sequence.

Whether an RNN cell stepped in a Python loop could run as one call over the whole sequence: read
from the source of the line that calls it, each step's input is the loop's position in a sequence
made before the loop (`self.cell(e[:, t], (h, c))`, `x_t = x[t]`
then `self.cell(x_t, h)`, or `for x_t in x.unbind(1):`), not the previous step's output (a decoder
feeding back its prediction must step). Then nn.LSTM (nn.GRU, nn.RNN) over the sequence computes
the same outputs in one call."""

from __future__ import annotations

import ast
import functools
import linecache
import re
from typing import Any

from gpubottle.analysis.loop_source import call_name, enclosing_def, parsed, split_site
from gpubottle.analysis.stacks import Frame
from gpubottle.evidence import BagLookups, CellLoop, InnerPerSample, SiblingModules, UntrainedGrads
from gpubottle.probes.sites import is_user_file, place

FUSED = {"LSTMCell": "LSTM", "GRUCell": "GRU", "RNNCell": "RNN"}  # the cell -> its whole-sequence module


def _assigned(body: list[ast.stmt]) -> dict[str, list[ast.expr | None]]:
    """Each name the statements assign, with the values it is given (None: by a for, with, +=)."""
    out: dict[str, list[ast.expr | None]] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, []).append(node.value if isinstance(t, ast.Name) else None)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
                target = getattr(node, "target", None)
                for n in ast.walk(target) if target is not None else ():
                    if isinstance(n, ast.Name):
                        out.setdefault(n.id, []).append(None)
    return out


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


Sequence = tuple[str, int | None]  # its source text, the axis the loop walks (None: not known)


def _axis(index: ast.expr, steps: set[str]) -> int | None:
    """Which axis `x[index]` takes the loop's position on: `x[:, t]` 1, `x[t]` 0."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(p, ast.Constant) and p.value is Ellipsis for p in parts):
        return None
    return next((i for i, p in enumerate(parts)
                 if any(isinstance(n, ast.Name) and n.id in steps for n in ast.walk(p))), None)


def _position(arg: ast.expr, steps: set[str], changed: dict[str, list[ast.expr | None]]) -> Sequence | None:
    """The sequence `arg` reads the loop's position of (`e[:, t]`: "e", axis 1), where that sequence
    is not changed in the loop."""
    if isinstance(arg, ast.Subscript) and any(
            isinstance(n, ast.Name) and n.id in steps for n in ast.walk(arg.slice)):
        root = _root(arg.value)
        if root is not None and root not in changed and root not in steps:
            return ast.unparse(arg.value), _axis(arg.slice, steps)
    return None


def _walked(it: ast.expr) -> Sequence:
    """`for x_t in x.unbind(1)`: x along axis 1; `for x_t in x`: axis 0."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "unbind":
        arg = it.args[0] if it.args else next((k.value for k in it.keywords if k.arg == "dim"), None)
        axis = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, int) else (
            0 if arg is None else None)
        return ast.unparse(it.func.value), axis
    return ast.unparse(it), 0


@functools.lru_cache(maxsize=64)
def sequence_input(path: str, line: int, name: str) -> Sequence | None:
    """The sequence (its source text, and the axis the loop walks) whose positions the call of
    `name` (`self.cell`) at path:line takes one per iteration of its loop; None where its input
    may come from the loop's own work."""
    p = parsed(path)
    if p is None:
        return None
    tree = p[1]
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For) and n.body
             and n.body[0].lineno <= line <= (n.end_lineno or n.lineno)]
    if not loops:
        return None
    loop = max(loops, key=lambda n: n.lineno)  # the innermost
    call = next((c for c in ast.walk(loop) if isinstance(c, ast.Call) and c.args
                 and c.lineno <= line <= (c.end_lineno or c.lineno) and ast.unparse(c.func) == name), None)
    if call is None:
        return None
    steps = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    changed = _assigned(loop.body)
    arg = call.args[0]
    if isinstance(arg, ast.Name) and arg.id in steps:  # for x_t in x.unbind(1): the loop walks it
        return _walked(loop.iter)
    if isinstance(arg, ast.Name) and len(changed.get(arg.id, ())) == 1:  # x_t = e[:, t]
        value = changed[arg.id][0]
        if value is not None:
            without = {k: v for k, v in changed.items() if k != arg.id}
            return _position(value, steps, without)
        return None
    return _position(arg, steps, changed)


def cell_loops(records: list[list[Any]] | None, median_step_s: float | None = None) -> list[CellLoop]:
    """The counted step's cell records (probes/inner_calls.py), each with what its line's source
    says of its input. Its forwards' share is of the measured steps' median where known: the
    counted step's own clock holds its hooks' cost and, beside busy programs, whatever wait for a
    core fell in it (a cell's share read 0.087 there, 0.21-0.23 quiet)."""
    out = []
    for r in records or ():
        cls, name, site, calls, input_size, hidden_size, spent, step_s = r[:8]
        step_s = median_step_s or step_s
        path, _, line = (site or "").rpartition(":")
        seq = sequence_input(path, int(line), str(name)) if name and line.isdigit() else None
        out.append(CellLoop(str(cls), name, site, int(calls), int(input_size), int(hidden_size),
                            round(min(1.0, float(spent) / float(step_s)), 4) if step_s else None,
                            seq[0] if seq else None, seq[1] if seq else None))
    return out


def per_sample_inner(records: list[list[Any]] | None, outer_calls: int) -> list[InnerPerSample]:
    """The modules the counted step's forward called once per sample of its batch: as many calls as
    the batch has rows (for each of the `outer_calls` forwards), each on one sample (`x[i]`: the
    batch's shape less its first dimension, or `x[i:i+1]`: with a first dimension of 1)."""
    out = []
    for r in records or ():
        cls, name, site, calls, shape, batch = r[:6]
        if not shape or not batch or len(batch) < 2 or not batch[0] or batch[0] < 2:
            continue
        one = [int(d) for d in batch[1:]]
        if int(calls) == int(batch[0]) * max(1, outer_calls) and [int(d) for d in shape] in (one, [1, *one]):
            out.append(InnerPerSample(str(cls), str(name), site, int(calls), [int(d) for d in shape],
                                      [int(d) for d in batch]))
    return out


def built_at(site: str | None, cls: str) -> tuple[str, str] | None:
    """The line that builds the module of class `cls` that the line `site` calls, read from the
    function holding `site` (`head = nn.Linear(1024, 10)` above `return head(h)` in a forward):
    the last call of that class at or above it, with its statement's code on one line. None where
    there is none (a module kept outside)."""
    path, _, line = (site or "").rpartition(":")
    p = parsed(path) if line.isdigit() else None
    if p is None:
        return None
    at = int(line)
    func = enclosing_def(p[1], at)
    if func is None:
        return None
    calls = [c for c in ast.walk(func)
             if isinstance(c, ast.Call) and c.lineno <= at and call_name(c.func) == cls]
    if not calls:
        return None
    call = max(calls, key=lambda c: c.lineno)
    stmt = next((s for s in ast.walk(func) if isinstance(s, ast.stmt) and not isinstance(
        s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.While, ast.If, ast.With, ast.Try))
        and s.lineno <= call.lineno <= (s.end_lineno or s.lineno)), None)
    code = ast.get_source_segment(p[0], stmt if stmt is not None else call) or ""
    return f"{path}:{call.lineno}", " ".join(code.split()).replace("( ", "(")


def held_at(site: str | None, holder: str | None) -> str | None:
    """Where the attribute in `holder` ('Net.hidden (a plain list)') is assigned (`self.hidden =`),
    read from the file of `site` (the line that calls what it holds)."""
    path, _, line = (site or "").rpartition(":")
    if not holder or not line.isdigit():
        return None
    attr = holder.split(" ", 1)[0].rsplit(".", 1)[-1]
    pattern = re.compile(rf"^\s*self\.{re.escape(attr)}\s*(:[^=]*)?=[^=]")
    return next((f"{path}:{n}" for n, text in enumerate(linecache.getlines(path), 1)
                 if pattern.match(text)), None)


def untrained(row: list[Any]) -> UntrainedGrads:
    """model_calls' untrained row: [name, line, elements, trained, whole, input_grad, built, no part
    of the model, modules, holder, the data's shape] (older records end sooner)."""
    built = bool(row[6:7] and row[6])
    stray = bool(row[7:8] and row[7])
    found = built_at(row[1], str(row[0])) if built else None
    holder = row[9] if len(row) > 9 and stray and not built else None
    return UntrainedGrads(str(row[0]), row[1], int(row[2]), int(row[3]), bool(row[4]),
                          bool(row[5:6] and row[5]), built, found[0] if found else None,
                          found[1] if found else None, stray and not built,
                          int(row[8]) if len(row) > 8 else 1, holder, held_at(row[1], holder),
                          [int(x) for x in row[10]] if len(row) > 10 and row[10] else None)


def sibling_modules(records: list[list[Any]] | None, main: list[list[Frame]] | None) -> list[SiblingModules]:
    """The counted step's sibling records (probes/inner_calls.py), each with the share of the main
    thread's samples (`main`) at its line: the forward's part of their cost (their backward runs in
    autograd's engine, which names no line)."""
    out = []
    for r in records or ():
        cls, name, site, modules, calls, shape, _outer, same_input, alike, config = r[:10]
        share = None
        if main:
            at = sum(1 for st in main
                     if any(is_user_file(f.file) and place(f.file, f.line) == site for f in st))
            share = round(at / len(main), 4)
        out.append(SiblingModules(str(cls), str(name), site, int(modules), int(calls),
                                  [int(d) for d in shape] if shape else None, bool(same_input), bool(alike),
                                  dict(config or {}), share, bool(r[10]) if len(r) > 10 else False))
    return out


BAG_CALLS_MIN = 8  # an embedding's calls from one line in the counted step, from which it is said


def bag_lookups(records: list[list[Any]] | None, cwd: str | None) -> list[BagLookups]:
    """The inner modules' records (probes/inner_calls.py repeated) of an nn.Embedding called
    BAG_CALLS_MIN times or more from a line that reduces each lookup (`.mean(`/`.sum(` on the
    call, or the call inside torch.mean/torch.sum): what nn.EmbeddingBag does for all at once."""
    out = []
    for r in records or ():
        cls, name, site, calls = r[:4]
        at = split_site(site, cwd)
        if cls != "Embedding" or int(calls) < BAG_CALLS_MIN or at is None or not name:
            continue
        text = linecache.getline(*at)
        call = re.escape(str(name)) + r"\((?:[^()]|\([^()]*\))*\)"
        m = (re.search(call + r"\.(mean|sum)\(", text)
             or re.search(r"\b(mean|sum)\(\s*" + call, text))
        if m:
            out.append(BagLookups(str(name), site, int(calls), m.group(1)))
    return out
