"""A custom torch.autograd.Function's Python loop, read from stack samples as py-spy gives them:
the user's frame beneath torch's autograd/function.py, its lines inside a `for` of its own body
(tests/scripts/real_code/custom_backward.py, whose backward goes row by row)."""

from __future__ import annotations

from pathlib import Path

from script_lines import line_of

from gpubottle.analysis.autograd_functions import AUTOGRAD_LOOP, autograd_loop
from gpubottle.analysis.loop_source import enclosing_header
from gpubottle.analysis.stacks import Frame

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_code" / "custom_backward.py"
TORCH = "/venv/lib/python3.11/site-packages/torch"


def _at(text: str) -> int:
    return line_of(SCRIPT, text)


def _stack(line: int, name: str = "ClipAct.backward") -> list[Frame]:
    return [Frame("<module>", str(SCRIPT), _at("loss.backward()")),
            Frame("Tensor.backward", f"{TORCH}/_tensor.py", 625),
            Frame("BackwardCFunction.apply", f"{TORCH}/autograd/function.py", 307),
            Frame(name, str(SCRIPT), line)]


def test_the_functions_loop_is_named_at_its_header_with_its_share():
    body, header = _at("out[i] = g[i] * mask"), _at("for i in range(x.shape[0])")
    assert enclosing_header(str(SCRIPT), body) == header
    assert enclosing_header(str(SCRIPT), _at("(x,) = ctx.saved_tensors")) is None
    model = [Frame("<module>", str(SCRIPT), _at("loss = nn.functional")),
             Frame("Linear.forward", f"{TORCH}/nn/modules/linear.py", 134)]
    top = autograd_loop([_stack(body)] * 6 + [_stack(_at("mask = (x[i]"))] * 2 + [model] * 2)
    assert top is not None and top.function == "ClipAct.backward" and top.kind == AUTOGRAD_LOOP
    assert top.location.endswith(f"custom_backward.py:{header}") and top.share == 0.8


def test_a_function_whose_time_is_not_in_a_loop_is_not_named():
    straight = _stack(_at("return x.clamp(-1, 1)"), "ClipAct.forward")
    assert autograd_loop([straight] * 8) is None
    assert autograd_loop([]) is None
    # (a library's own Function, no user frame beneath torch's: nothing of the script's)
    assert autograd_loop([_stack(3)[:3]] * 4) is None
