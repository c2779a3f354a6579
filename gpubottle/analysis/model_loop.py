"""Where a script calls its model when no training step times it (an inference or generation script:
no DataLoader, backward or optimizer step), and whether the loop around that call grows the very
input it passes: a hand-written generate() re-running the whole sequence for each new token
(`logits = model(seq)`, then `seq = torch.cat([seq, nxt], dim=1)`). Such a run read as start-up
("the script's own work before its first batch: cache it, or move it into __getitem__"), the
model's forward being all of its time.

Measured here: a 2-layer transformer (d=128) generating 48 tokens after a 16-token prompt, 24
prompts one at a time: 0.90-1.12 s; the 24 as one batch 0.42-0.47 s; each call on the newest token
alone (what a key/value cache computes) 0.44 s, a gain that grows with the sequence.
"""

from __future__ import annotations

import ast
from collections import Counter

from gpubottle.analysis.loop_source import call_name, innermost, parsed
from gpubottle.analysis.row_loops import row_loop_at
from gpubottle.analysis.stacks import Frame, model_caller
from gpubottle.probes.sites import place

# (np.append too: `seq = np.append(seq, tok)` returns a new, longer array)
_CONCAT = {"cat", "concat", "concatenate", "hstack", "column_stack", "append"}


def model_call_site(stacks: list[list[Frame]]) -> tuple[str, int] | None:
    """(file, line) of the call of a module most of `stacks` are under; None where none is."""
    calls: Counter[tuple[str, int]] = Counter()
    for st in stacks:
        f = model_caller(st)
        if f is not None:
            calls[(f.file, f.line)] += 1
    return calls.most_common(1)[0][0] if calls else None


def grown_input(path: str, line: int) -> int | None:
    """The line, in the loop around the model call at `line`, that appends to the input the call
    passes (`seq = torch.cat([seq, nxt], 1)`); None where there is none."""
    p = parsed(path)
    if p is None:
        return None
    calls = [n for n in ast.walk(p[1]) if isinstance(n, ast.Call) and n.lineno <= line
             <= (n.end_lineno or n.lineno)]
    passed = {a.id for c in calls for a in c.args if isinstance(a, ast.Name)}
    loop = innermost(p[1], line, (ast.For, ast.While))
    if not passed or loop is None:
        return None
    for node in ast.walk(loop):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and call_name(node.value.func) in _CONCAT):
            continue
        targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
        reads = {n.id for a in node.value.args for n in ast.walk(a) if isinstance(n, ast.Name)}
        if targets & passed & reads:
            return node.lineno
    return None


def model_row_loop(stacks: list[list[Frame]]) -> tuple[str, str] | None:
    """(the place, the header) of a Python loop around the model's call that feeds it one row at a
    time (analysis/row_loops.py), None where there is none."""
    site = model_call_site(stacks)
    found = row_loop_at(*site) if site is not None else None
    return (place(site[0], found[0]), found[1]) if site is not None and found is not None else None


def model_loop(stacks: list[list[Frame]]) -> tuple[str | None, str | None]:
    """(the model call's place, the place of the line growing its input) for the main thread's
    samples; either None where not found."""
    site = model_call_site(stacks)
    if site is None:
        return None, None
    grows = grown_input(*site)
    return place(*site), place(site[0], grows) if grows is not None else None
