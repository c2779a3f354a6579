"""A user function called once for every value (Tensor.apply_, np.vectorize), read from a sample's
frames (analysis/element_calls.py; tests/scripts/real_code/apply_per_value.py)."""

from __future__ import annotations

from pathlib import Path

from script_lines import line_of

from gpubottle.analysis.element_calls import element_call_kind
from gpubottle.analysis.stacks import Frame
from gpubottle.analysis.work_kinds import ELEMENT_CALLS, remedy, wasted

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_code" / "apply_per_value.py"
NUMPY = "/venv/lib/python3.11/site-packages/numpy/lib/_function_base_impl.py"


def _at(text: str) -> int:
    return line_of(SCRIPT, text)


def test_a_function_tensor_apply_calls_back_is_called_per_value():
    st = [Frame("Signals.__getitem__", str(SCRIPT), _at("s.apply_(clip_and_scale)")),
          Frame("clip_and_scale", str(SCRIPT), _at("return max(-1.0"))]
    assert element_call_kind(st, 1) == ELEMENT_CALLS
    assert wasted(ELEMENT_CALLS) and "s.clamp(-1, 1) * 0.5" in (remedy(ELEMENT_CALLS) or "")


def test_np_vectorize_between_the_line_and_the_function_is_per_value():
    st = [Frame("Signals.__getitem__", str(SCRIPT), _at("s = self.x[i].clone()")),
          Frame("vectorize.__call__", NUMPY, 2466), Frame("vectorize._vectorize_call", NUMPY, 2548),
          Frame("clip_and_scale", str(SCRIPT), _at("return max(-1.0"))]
    assert element_call_kind(st, 3) == ELEMENT_CALLS


def test_a_plain_call_or_other_library_frames_between_are_not():
    plain = [Frame("Signals.__getitem__", str(SCRIPT), _at("s = self.x[i].clone()")),
             Frame("clip_and_scale", str(SCRIPT), _at("return max(-1.0"))]
    assert element_call_kind(plain, 1) is None
    other = [Frame("Signals.__getitem__", str(SCRIPT), _at("s.apply_(clip_and_scale)")),
             Frame("wrapper", "/venv/lib/python3.11/functools.py", 10),
             Frame("clip_and_scale", str(SCRIPT), _at("return max(-1.0"))]
    assert element_call_kind(other, 2) is None
    assert element_call_kind([Frame("clip_and_scale", str(SCRIPT), 1)], 0) is None
