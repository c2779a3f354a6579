"""A penalty over the model's parameters written tensor by tensor, from the counted step's record
(probes/param_ops.py) and the line's source: it counts where what the line computes flows into
backward() (`loss = loss + lam * l2`), not a weight norm logged beside it; and its form, a sum of
squares (what an optimizer's weight_decay adds to each gradient) or another (an L1's abs)."""

from __future__ import annotations

import linecache
import re
from typing import Any

from gpubottle.analysis.loop_source import to_backward
from gpubottle.evidence import ParamPenalty

# p.pow(2), p ** 2, p.square(), torch.square(p), p.norm() ** 2, (p * p)
_SQUARED = re.compile(r"\.pow\(\s*2(?:\.0*)?\s*\)|\*\*\s*2(?:\.0*)?\b|\bsquare\(|\b(\w+)\s*\*\s*\1\b")


def squared(text: str) -> bool:
    """The line sums squares: p.pow(2), p ** 2, p.square(), p.norm() ** 2, p * p."""
    return bool(_SQUARED.search(text)) and "abs(" not in text


def _to_backward(site: str | None) -> bool:
    path, _, line = (site or "").rpartition(":")
    return line.isdigit() and to_backward((path, int(line)))


def param_penalty(records: list[list[Any]] | None) -> ParamPenalty | None:
    """The counted step's line with the most ops on parameters whose result reaches backward(): its
    own, or where it is a helper's `return`, the line that called the helper (`l2 = penalty(m)`),
    which the penalty is then said at."""
    for r in records or ():
        site, ops, on_params, spent, functions = r[:5]
        called_at = r[5] if len(r) > 5 else None
        path, _, line = (site or "").rpartition(":")
        if not line.isdigit():
            continue
        text = linecache.getline(path, int(line))
        if not _to_backward(site):
            if not (text.lstrip().startswith("return ") and _to_backward(called_at)):
                continue
            site = called_at
        return ParamPenalty(site, int(on_params), int(ops), float(spent), [str(f) for f in functions],
                            squared(text))
    return None
