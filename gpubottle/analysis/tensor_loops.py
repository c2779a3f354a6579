"""A Python loop over the model's tensors (an EMA of the weights, a hand-written update), read from
the source at the line a stack sample is on: the loop's in-place updates, or its header's walk over
the modules that builds the lists (its kind: work_kinds.py says its remedy)."""

from __future__ import annotations

import linecache
import re

from gpubottle.analysis.loop_source import enclosing_header

# A line inside the user's own loop over the model's tensors (`for e, p in zip(ema.parameters(),
# model.parameters()): e.mul_(d).add_(p, alpha=1 - d)`), its ops in C with no frame beneath: one
# small op per tensor per call. Measured here, an EMA over 162 tensors: 3.2-3.4 ms as the loop,
# 1.4-1.7 ms as one torch._foreach_lerp_; over 242 tensors of two state_dicts: 4.5 ms as the loop,
# 1.3 ms foreach over fresh state_dicts (walking the modules is 1.4 ms of it), 0.2 ms over lists
# kept once.
TENSOR_LOOP = "a Python loop over the model's tensors, a few small ops on each"
_IN_PLACE = re.compile(r"\.[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\(")  # ema.mul_(, p.data.clamp_(, e.copy_(
_TENSOR_LISTS = (".parameters()", ".named_parameters()", ".state_dict()", ".buffers()",
                 ".named_buffers()")


def tensor_loop_kind(path: str, line: int) -> str | None:
    """TENSOR_LOOP where `line` of `path` updates a tensor in place (`.copy_(`, `.mul_(`, ...) in
    the body of a `for` over a module's tensors (.parameters(), .state_dict(), ...): the nearest
    less-indented line above it that starts a `for` names one. Read from the source, as the
    sample's line is. A line that reads values out (.tolist(), sum(), a norm for a log) is not:
    that is logging's Python work, which less often does fix."""
    if not _IN_PLACE.search(linecache.getline(path, line).split("#", 1)[0]):
        return None
    # (an `if`/`with`, or a `while`, inside the loop: looked through to the `for`)
    n = enclosing_header(path, line, ("for ",), reach=40)
    return TENSOR_LOOP if n is not None and any(t in linecache.getline(path, n) for t in _TENSOR_LISTS) \
        else None


def tensor_walk_kind(path: str, line: int) -> str | None:
    """TENSOR_LOOP where `line` of `path` is the header of such a loop, `for e, p in
    zip(ema.state_dict().values(), ...)` with an in-place update in its body: a sample there is in
    the walk over every module that builds the lists (state_dict(), parameters()), which the
    remedy's lists built once remove too (an EMA's walk: 1.4 of its 4.5 ms)."""
    head = linecache.getline(path, line)
    indent = len(head) - len(head.lstrip())
    if not head.lstrip().startswith("for ") or not any(t in head for t in _TENSOR_LISTS):
        return None
    for n in range(line + 1, line + 12):
        text = linecache.getline(path, n)
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        if _IN_PLACE.search(text.split("#", 1)[0]):
            return TENSOR_LOOP
    return None
