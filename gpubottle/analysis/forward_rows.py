"""A Python loop in the model's own forward that computes one row at a time: a graph layer summing
its edges' messages as `for s, d in edges: out[d] = out[d] + msg[s]`, a per-token update written
row by row. Every op in the body runs once a row with torch's per-op cost, and autograd records
each one as a node that backward then runs one at a time; a row written into a larger tensor in
place (`out[d] = ...`) also makes backward copy that whole tensor's gradient at each such node.
So such a run's time is mostly backward, and the compute-bound verdict offered torch.compile and
bfloat16, which would not remove the loop.

Measured here (tests/scripts/real_code/edge_messages.py's shape: 2,000 nodes, 3,000 edges, two
layers, 16 steps): the loop 7.2 s a run (backward 4.7 s of the 5.2 s of steps); the messages
gathered by a tensor of indices and summed with one index_add_, 2.1 s, the same loss.

Read from the samples in the model's forward: their innermost user frame's line inside such a
loop (analysis/row_loops.py, with a loop over index values of any kind counted: inside a forward a
subscript is a tensor's)."""

from __future__ import annotations

from collections import Counter

from gpubottle.analysis.element_writes import fill_loop
from gpubottle.analysis.list_tensor import per_value, values_loop
from gpubottle.analysis.row_loops import row_loop_at, writes_rows
from gpubottle.analysis.stack_shares import innermost_user_at
from gpubottle.analysis.stacks import Frame, phase_of
from gpubottle.evidence import StackFrameShare
from gpubottle.probes.sites import place

ROW_WRITES = "writing rows into a larger tensor in place, one at a time"  # (its kind)
# A tensor the forward fills one element at a time in Python loops at every call, its values no
# computation of rows (a causal mask, `mask[i, j] = float("-inf")` for j > i): an indexing op an
# element, no autograd node. Measured here (T = 96, two encoder layers, 60 steps): the script 3.9 s,
# 3.4 s with torch.triu; at T = 256 the fill alone is ~30,000 writes a call.
ELEMENT_FILL = "filling a tensor one element at a time in Python loops at every call"
# A tensor whose values the forward makes one at a time as Python numbers at every call, then builds
# with torch.tensor (analysis/list_tensor.values_loop): a sinusoidal timestep embedding written with
# math.sin per value (256 timesteps x 128 values, 7.1 ms a call, most of a 9.5-ms step), a mask as a
# nested comprehension of comparisons (T = 128: 2.3 ms a call). No op and no autograd node a value:
# the interpreter's time. Said as a fill is.
VALUES_LOOP = "making a tensor's values one at a time as Python numbers at every call"
PYTHON_FILLS = (ELEMENT_FILL, VALUES_LOOP)
# Most of the forward's samples (their user frames) are inside the loop.
LOOP_OF_FORWARD = 0.5


def forward_row_loop(stacks: list[list[Frame]]) -> StackFrameShare | None:
    """The row loop most of the forward's samples are in, named at its `for` (`location`, the
    header as `row_loop_text`), in the function that holds it; `share`: the forward's samples in
    it, of all `stacks`; `kind` ROW_WRITES where its body writes rows in place. None where the
    forward has no such loop holding LOOP_OF_FORWARD of it; then the loop filling a tensor element
    by element (kind ELEMENT_FILL, named at its outermost `for`) or making its values as Python
    numbers (VALUES_LOOP) that holds the most, whatever its part of the forward (decide weighs its
    share of the step)."""
    forward = [st for st in stacks if phase_of(st) == "forward"]
    rows: Counter[tuple[str, int, str]] = Counter()
    fills: Counter[tuple[str, int, str]] = Counter()
    values: Counter[tuple[str, int, str]] = Counter()
    texts: dict[tuple[str, int, str], str] = {}
    for st in forward:
        i = innermost_user_at(st)
        if i < 0 or st[i].name == "<module>":
            continue
        f = st[i]
        found = row_loop_at(f.file, f.line, any_index=True)
        fill = fill_loop(f.file, f.line) if found is None else None
        made = values_loop(f.file, f.line) if found is None and fill is None else None
        for at, counts in ((found, rows), (fill, fills), (made, values)):
            if at is not None:
                key = (f.file, at[0], f.name)
                counts[key] += 1
                texts[key] = at[1]
    if not stacks:
        return None
    if rows and rows.most_common(1)[0][1] >= LOOP_OF_FORWARD * len(forward):
        key, n = rows.most_common(1)[0]
        kind = ROW_WRITES if writes_rows(key[0], key[1]) else None
    elif fills or values:
        found_kinds = ((c.most_common(1)[0], k) for c, k in ((fills, ELEMENT_FILL), (values, VALUES_LOOP))
                       if c)
        (key, n), kind = max(found_kinds, key=lambda t: t[0][1])
    else:
        return None
    return StackFrameShare(function=key[2], location=place(key[0], key[1]), share=round(n / len(stacks), 4),
                           kind=kind, row_loop=place(key[0], key[1]), row_loop_text=texts[key],
                           per_value=per_value(key[0], key[1]) if kind == VALUES_LOOP else None)
