"""An nn.MultiheadAttention the script calls with its default need_weights=True and whose weights
the calling line drops (`a, _ = self.attn(h, h, h)`). Asked for its weights, the module computes
the (batch, heads, L, L) softmax itself and averages it over the heads; with need_weights=False
it runs scaled_dot_product_attention, one fused kernel (flash attention on a GPU), and returns the
same output. Measured here: 16 x 512 tokens of width 256, forward and backward, 375 ms against
250 ms; a 2-block model at 8 x 512 tokens, the run 17.1 s against 13.4 s.

Read from the main thread's stack samples: those inside torch's multi_head_attention_forward,
called through the module machinery alone from a user's line (not through torch's own
TransformerEncoderLayer, which passes need_weights=False already); that line's statement, read
from the source, must not pass need_weights=False and must drop the weights (an underscore name,
a name never read again in its function, or `[0]` of the call).
"""

from __future__ import annotations

import ast
import functools
from collections import Counter

from gpubottle.analysis.loop_source import enclosing_def, parent_map, parsed
from gpubottle.analysis.stacks import Frame, frame_path, short_name
from gpubottle.evidence import StackFrameShare
from gpubottle.probes.sites import is_user_file, place

_ATTENTION = ("/torch/nn/modules/activation.py", "MultiheadAttention.forward")
_FUNCTIONAL = ("/torch/nn/functional.py", "multi_head_attention_forward")


def _caller(st: list[Frame]) -> Frame | None:
    """The user's frame that called nn.MultiheadAttention (module.py's call machinery alone between
    them) where the sample is inside its multi_head_attention_forward; else None."""
    at = next((i for i, f in enumerate(st) if frame_path(f).endswith(_ATTENTION[0])
               and f.name.endswith(_ATTENTION[1])), -1)
    if at < 1 or not any(frame_path(f).endswith(_FUNCTIONAL[0]) and short_name(f.name) == _FUNCTIONAL[1]
                         for f in st[at + 1:]):
        return None
    for f in reversed(st[:at]):
        if is_user_file(f.file):
            return f
        if not frame_path(f).endswith("/torch/nn/modules/module.py"):
            return None  # (another library's module called it: TransformerEncoderLayer's own call)
    return None


def _weights_dropped(parent: ast.AST | None, scope: ast.AST | None) -> bool:
    if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant):
        return parent.slice.value == 0
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Tuple) and len(parent.targets[0].elts) == 2):
        return False
    weights = parent.targets[0].elts[1]
    if not isinstance(weights, ast.Name):
        return False
    if weights.id.startswith("_"):
        return True
    reads = [n for n in ast.walk(scope or parent) if isinstance(n, ast.Name) and n.id == weights.id
             and isinstance(n.ctx, ast.Load)]
    return not reads


@functools.lru_cache(maxsize=64)
def drops_weights(path: str, line: int) -> bool:
    """The statement at `line` of `path` calls a module without need_weights=False and drops the
    second of the two values it returns (the attention weights)."""
    p = parsed(path)
    if p is None:
        return False
    tree = p[1]
    parents = parent_map(tree)
    scope = enclosing_def(tree, line)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if any(k.arg == "need_weights" for k in node.keywords) or len(node.args) >= 5:
                continue  # (said either way: False is the fix, True is asked for on purpose)
            if _weights_dropped(parents.get(id(node)), scope):
                return True
    return False


def dropped_attention_weights(stacks: list[list[Frame]]) -> StackFrameShare | None:
    """The user's line calling nn.MultiheadAttention whose weights it drops, most sampled inside
    the attention's forward, with that share of `stacks` (the main thread's); None without one."""
    by: Counter[tuple[str, str, int]] = Counter()
    for st in stacks:
        f = _caller(st)
        if f is not None:
            by[(f.name, f.file, f.line)] += 1
    for (name, file, line), _n in by.most_common():
        if drops_weights(file, line):
            # (each of its calls that drops them: the blocks' attentions at one line, or several)
            total = sum(k for (nm, fl, ln), k in by.items() if (nm, fl) == (name, file)
                        and drops_weights(fl, ln))
            return StackFrameShare(function=name, location=place(file, line),
                                   share=round(total / len(stacks), 4))
    return None
