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
# ...one whose body changes the gradients (`p.grad.mul_(...)`: a clip by hand, per tensor) or the
# parameters from them (`p.data.add_(p.grad, alpha=-lr)`): the training needs it at every step.
GRADS_LOOP = "a Python loop over the model's gradients, a few small ops on each (a clip or an update by hand)"
_GRAD = re.compile(r"\.grad\b")
_IN_PLACE = re.compile(r"\.[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\(")  # ema.mul_(, p.data.clamp_(, e.copy_(
_TENSOR_LISTS = (".parameters()", ".named_parameters()", ".state_dict()", ".buffers()",
                 ".named_buffers()")


def tensor_loop_kind(path: str, line: int) -> str | None:
    """TENSOR_LOOP where `line` of `path` is in the body of a `for` over a module's tensors
    (.parameters(), .state_dict(), ...) that updates a tensor in place (`.copy_(`, `.mul_(`, ...),
    on that line or on another of the body: a hand-written clip's `norm = p.grad.norm()` and
    `if norm > 1.0:` before its `p.grad.mul_(...)` are that loop's small ops too (measured on 64
    tensors: 451 us a step as the loop, 155 with torch._foreach_norm and _foreach_div_). The
    nearest less-indented line above it that starts a `for` names the loop. Read from the source,
    as the sample's line is. A loop that only reads values out (.tolist(), sum(), a norm for a
    log) is not: that is logging's Python work, which less often does fix."""
    text = linecache.getline(path, line).split("#", 1)[0]
    if not text.strip():
        return None
    # (an `if`/`with`, or a `while`, inside the loop: looked through to the `for`)
    n = enclosing_header(path, line, ("for ",), reach=40)
    if n is None or not any(t in linecache.getline(path, n) for t in _TENSOR_LISTS):
        return None
    if not (_IN_PLACE.search(text) or _updates(path, n)):
        return None
    return GRADS_LOOP if _updates(path, n, _GRAD) else TENSOR_LOOP


def _updates(path: str, header: int, reading: re.Pattern[str] | None = None) -> bool:
    """The body of the `for` at `header` (its next lines more indented than it, up to 12) updates
    a tensor in place (`reading`: on a line that matches it too)."""
    head = linecache.getline(path, header)
    indent = len(head) - len(head.lstrip())
    for n in range(header + 1, header + 13):
        text = linecache.getline(path, n)
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        code = text.split("#", 1)[0]
        if _IN_PLACE.search(code) and (reading is None or reading.search(code)):
            return True
    return False


def tensor_walk_kind(path: str, line: int) -> str | None:
    """TENSOR_LOOP where `line` of `path` is the header of such a loop, `for e, p in
    zip(ema.state_dict().values(), ...)` with an in-place update in its body: a sample there is in
    the walk over every module that builds the lists (state_dict(), parameters()), which the
    remedy's lists built once remove too (an EMA's walk: 1.4 of its 4.5 ms)."""
    head = linecache.getline(path, line)
    if not head.lstrip().startswith("for ") or not any(t in head for t in _TENSOR_LISTS):
        return None
    if not _updates(path, line):
        return None
    return GRADS_LOOP if _updates(path, line, _GRAD) else TENSOR_LOOP


def loop_header(path: str, line: int) -> int | None:
    """The line of the `for` over the model's tensors that `line` is in (or is), where its samples
    are of that loop's kinds: the loop is what a finding names, not one of its lines."""
    if tensor_walk_kind(path, line) is not None:
        return line
    n = enclosing_header(path, line, ("for ",), reach=40)
    return n if n is not None and tensor_walk_kind(path, n) is not None else None
