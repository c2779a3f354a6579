"""torch.compile offered by the script's names for the modules its step calls: not a module's call
of itself from its own method (`self(x)` in a Lightning-style training_step the loop calls was
told `self = torch.compile(self)`; /tmp/sw36/lit_style.py, 2026-11-30)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import ModelCallCount
from gpubottle.rules import diagnose


def _first_fix(called: list[str]) -> str:
    ev = evidence(steps=200, step_s=0.002, main=1.9, cores=2.0, loader=False)
    ev.model_calls = ModelCallCount("LitClassifier", "lit.py:17", 1, 512, called)
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f.fixes[0].text


def test_a_modules_call_of_itself_is_offered_compile_by_no_name_of_its_own() -> None:
    text = _first_fix(["self"])
    assert "self = torch.compile" not in text and "torch.compile(model)" in text, text
    assert "net = torch.compile(net)" in _first_fix(["net"])
    assert "self.net = torch.compile(self.net)" in _first_fix(["self.net"])  # (a trainer's attribute)
