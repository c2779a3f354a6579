"""A loss taken slice by slice of the model's output in a Python loop and summed for backward()
(analysis/slice_losses.py): each slice's backward writes a gradient as large as the whole output,
and autograd sums them. Said with one loss over the whole tensor, where the slices are many and
their gradients large (thresholds.SLICE_LOSS_MIN, SLICE_GRAD_BYTES)."""

from __future__ import annotations

import math

from gpubottle.evidence import SliceLoss
from gpubottle.report import Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import gib

ELEMENT_BYTES = 4  # float32: the size torch's default dtype gives each gradient element


def slices(s: SliceLoss) -> int | None:
    """How many slices the loop takes: the output's size in the sliced dimension."""
    shape = s.out_shape or []
    return shape[s.dim] if 0 <= s.dim < len(shape) else None


def written(s: SliceLoss) -> int | None:
    """Bytes of gradient the slices' backward writes a step."""
    n = slices(s)
    return n * math.prod(s.out_shape or []) * ELEMENT_BYTES if n else None


def said(s: SliceLoss | None) -> SliceLoss | None:
    n, b = (slices(s), written(s)) if s is not None else (None, None)
    return s if n and b and n >= th.SLICE_LOSS_MIN and b >= th.SLICE_GRAD_BYTES else None


def slice_fix(s: SliceLoss) -> Fix:
    shape = " x ".join(str(d) for d in s.out_shape or [])
    whole = gib(math.prod(s.out_shape or []) * ELEMENT_BYTES)
    inside = f" (in {s.function})" if s.function else ""
    last = (s.out_shape or [0])[-1]
    text = (f"the loop at {s.site}{inside} (`{s.header}`) adds up a loss of `{s.index}` one slice at a "
            f"time: each slice's backward writes a gradient as large as all of `{s.tensor}` ({shape}, "
            f"{whole}), zeros around its slice, and autograd sums them: {slices(s)} a step, "
            f"{gib(written(s) or 0)} written. One loss over the whole tensor writes one: e.g. "
            f"{s.call or 'crit'}({s.tensor}.reshape(-1, {last}), {s.target or 'y'}.reshape(-1)) for a "
            "cross-entropy over time steps (the same value where each slice's loss is a mean over as "
            "many elements; for other weights, reduction='none' over the whole tensor, then weighted "
            "and summed). On a test "
            "machine a GRU tagger's 128 steps of 32 x 128 x 2000 logits ran 0.53 s a step as the "
            "loop, 0.09 s as one loss, the same loss; try it and time it")
    return Fix(text=text, where=s.site)
