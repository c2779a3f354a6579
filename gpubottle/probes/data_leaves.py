"""The data a model's input is taken from, where that data requires grad: `X = torch.tensor(data,
requires_grad=True)`, then `model(X[idx])`. Each step's backward then computes X's whole gradient
(an index's backward is a zero tensor of X's size with the batch's rows added in) and adds it into
X.grad, which no optimizer reads. Measured here (tests/scripts/real_code/data_requires_grad.py:
400,000 x 64 floats, an MLP of 17k parameters): backward 8.2 s of 8.4 s of steps; the script 11.3 s,
2.3 s with X made without requires_grad.

Read at the counted step's first call of each outermost module (probes/model_calls.py): the leaves
its first input's graph reaches within LEAF_WALK_NODES nodes (an AccumulateGrad node's variable),
kept where they are plain tensors (a module's own weights are untrained-layer's) of `least`
elements or more and larger than the input itself (it is cut from them): an adversarial
perturbation (`model(x + delta)`, delta.grad read by the script) is the input's size or smaller.
Fails open: an error finds nothing."""

from __future__ import annotations

import weakref
from typing import Any

# Nodes of the input's graph walked back from it: the data is a node or two away (an index, a
# reshape, a cast); a model's output fed on is a module's whole graph, its leaves its parameters.
LEAF_WALK_NODES = 16
# The data is this many times the input or more (a batch cut from a dataset); a perturbation added
# to the batch is its size.
CUT_FROM = 2


def data_leaves(first: Any, least: int) -> list[Any]:
    """Weak references to the plain leaf tensors (no nn.Parameter) of `least` elements or more, and
    over CUT_FROM times `first`'s, that `first`'s graph reaches within LEAF_WALK_NODES nodes."""
    try:
        from torch.nn import Parameter

        out: list[Any] = []
        todo = [getattr(first, "grad_fn", None)]
        walked = 0
        while todo and walked < LEAF_WALK_NODES:
            fn = todo.pop()
            walked += 1
            if fn is None:
                continue
            var = getattr(fn, "variable", None)
            if var is not None:
                if not isinstance(var, Parameter) and var.numel() >= max(least, CUT_FROM * first.numel()):
                    out.append(weakref.ref(var))
                continue
            todo.extend(n for n, _ in getattr(fn, "next_functions", ()))
        return out
    except Exception:
        return []


def filled_rows(leaves: dict[int, list[Any]], held: set[int], trained: int,
                names: dict[int, str | None], sites: dict[int, str | None]) -> list[list[Any]]:
    """model_calls' untrained rows for the leaves backward filled a gradient for that no optimizer
    holds: [the module the input fed, its call's line, the leaf's elements, trained, 1 (whole), 0,
    0, 0, 1, None, the leaf's shape]."""
    out, seen = [], set()
    for key, refs in leaves.items():
        for ref in refs:
            t = ref()
            if t is None or id(t) in seen or id(t) in held or t.grad is None:
                continue
            seen.add(id(t))
            out.append([names.get(key) or "the model", sites.get(key), int(t.numel()), trained,
                        1, 0, 0, 0, 1, None, [int(s) for s in t.shape]])
    return out
