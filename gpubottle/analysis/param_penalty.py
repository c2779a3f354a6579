"""A penalty over the model's parameters written tensor by tensor, from the counted step's record
(probes/param_ops.py) and the line's source: it counts where what the line computes flows into
backward() (`loss = loss + lam * l2`), not a weight norm logged beside it; and its form, a sum of
squares (what an optimizer's weight_decay adds to each gradient) or another (an L1's abs)."""

from __future__ import annotations

import linecache
import re
from typing import Any

from gpubottle.analysis.loop_source import BACKWARD, flows_into
from gpubottle.evidence import ParamPenalty

# p.pow(2), p ** 2, p.square(), torch.square(p), p.norm() ** 2, (p * p)
_SQUARED = re.compile(r"\.pow\(\s*2(?:\.0*)?\s*\)|\*\*\s*2(?:\.0*)?\b|\bsquare\(|\b(\w+)\s*\*\s*\1\b")


def squared(text: str) -> bool:
    """The line sums squares: p.pow(2), p ** 2, p.square(), p.norm() ** 2, p * p."""
    return bool(_SQUARED.search(text)) and "abs(" not in text


def param_penalty(records: list[list[Any]] | None) -> ParamPenalty | None:
    """The counted step's line with the most ops on parameters whose result reaches backward()."""
    for site, ops, on_params, spent, functions in (r[:5] for r in records or ()):
        path, _, line = (site or "").rpartition(":")
        if not line.isdigit():
            continue
        text = linecache.getline(path, int(line))
        if "backward(" not in text and flows_into((path, int(line)), ()) != BACKWARD:
            continue
        return ParamPenalty(site, int(on_params), int(ops), float(spent), [str(f) for f in functions],
                            squared(text))
    return None
