"""A line that sorts or shuffles every value to keep a few of them. Shuffles every index of a
dataset to keep a batch of them: `np.random.choice(N, k,
replace=False)` (numpy's legacy choice permutes all N), `torch.randperm(N)[:k]`,
`np.random.permutation(N)[:k]`. Done at each step of a loop that indexes its tensors itself, it
costs the whole dataset's shuffle per batch. Measured here, N = 1,000,000 and k = 256: 12 ms a call
through np.random.choice, 6.8 ms through randperm, 0.012 ms as torch.randint(N, (k,)), 0.03 ms
through np.random.default_rng().choice (which does not shuffle all N), 0.002 ms slicing a
permutation made once an epoch. A script's loop that did so ran 14.4 ms steps, 0.5 ms of them its
model's.

Sorts every score to keep the top k (`np.argsort(scores)[-k:]`, `torch.argsort(s)[:k]`,
`sorted(xs)[:k]`): measured here, 400,000 scores and k = 256, 24 ms through np.argsort, 3.3 ms
through np.argpartition(scores, -k)[-k:], 0.9 ms through torch.topk.

Read from the script's source at the sample's line (the shuffle is C: the user's line is the
sample's innermost frame).
"""

from __future__ import annotations

import ast
import functools

from gpubottle.analysis.loop_source import call_name, dotted, parsed

_PERMUTATIONS = ("permutation", "randperm")
_SORTS = ("argsort", "sort", "sorted")


def _legacy_choice_without_replacement(call: ast.Call) -> bool:
    """np.random.choice(a, size, replace=False): the module's (legacy) choice permutes all of a."""
    name = dotted(call.func)
    if not (name.endswith("random.choice") and name.split(".")[0] in ("np", "numpy")):
        return False
    replace = next((k.value for k in call.keywords if k.arg == "replace"),
                   call.args[2] if len(call.args) > 2 else None)
    return isinstance(replace, ast.Constant) and replace.value is False


def _sliced_permutation(node: ast.Subscript) -> bool:
    """randperm(N)[:k], np.random.permutation(N)[:k]: all N shuffled, a slice kept."""
    return (isinstance(node.slice, ast.Slice) and isinstance(node.value, ast.Call)
            and call_name(node.value.func) in _PERMUTATIONS)


@functools.lru_cache(maxsize=256)
def sorts_to_pick(path: str, line: int) -> bool:
    """The statement at `line` of `path` sorts all of its values to keep a slice of them (the
    top or bottom k: `np.argsort(scores)[-k:]`)."""
    p = parsed(path)
    if p is None:
        return False
    for node in ast.walk(p[1]):
        if (isinstance(node, ast.Subscript) and node.lineno <= line <= (node.end_lineno or node.lineno)
                and isinstance(node.slice, ast.Slice) and isinstance(node.value, ast.Call)
                and call_name(node.value.func) in _SORTS):
            s = node.slice  # (one end open: the first or last k, not a window in the middle)
            if (s.lower is None) != (s.upper is None) and s.step is None:
                return True
    return False


@functools.lru_cache(maxsize=256)
def shuffles_to_pick(path: str, line: int) -> bool:
    """The statement at `line` of `path` shuffles all of a range to keep a few of it."""
    p = parsed(path)
    if p is None:
        return False
    for node in ast.walk(p[1]):
        if not (getattr(node, "lineno", 0) <= line <= (getattr(node, "end_lineno", None) or 0)):
            continue
        if isinstance(node, ast.Call) and _legacy_choice_without_replacement(node):
            return True
        if isinstance(node, ast.Subscript) and _sliced_permutation(node):
            return True
    return False
