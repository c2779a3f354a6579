"""compute-bound where the model's forward calls its encoder once per sample of the batch (a set
encoder over 64 sets of 16 x 64: 11.8 ms a step, 1.6 ms on the whole batch), from made-up evidence
shaped like the measured run: it read compute-bound with torch.compile only; the one call on the
whole batch leads, in the script's names, and faster math is not offered before it."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import InnerPerSample, ModelCallCount
from gpubottle.rules import diagnose


def _finding(*inner: InnerPerSample):
    ev = evidence(steps=140, step_s=0.0118, main=1.0, cores=2.0)
    ev.model_calls = ModelCallCount("SetEncoder", "sets.py:24", 1, 64, ["model"],
                                    per_sample_inner=list(inner))
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def test_one_call_on_the_whole_batch_leads_in_the_scripts_names() -> None:
    f = _finding(InnerPerSample("Sequential", "self.enc", "sets.py:16", 64, [16, 64], [64, 16, 64]))
    assert f.summary.endswith("and its forward calls self.enc once per sample: 64 calls a step"), f.summary
    first = f.fixes[0]
    assert first.text.startswith("the model's forward calls self.enc (Sequential) 64 times a step at "
                                 "sets.py:16, once per sample of its batch of 64 (each 16 x 64)"), first.text
    assert "self.enc(x)" in first.text and "BatchNorm" in first.text and "try it and time it" in first.text
    assert first.where == "sets.py:16" and first.expected is None
    assert not any("torch.compile(model)" in x.text for x in f.fixes), [x.text for x in f.fixes]


def test_without_it_faster_math_is_offered_as_before() -> None:
    f = _finding()
    assert "once per sample" not in f.summary and "torch.compile" in f.fixes[0].text
