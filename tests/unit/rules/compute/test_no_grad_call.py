"""A module run without gradients inside the training step on many more rows than the training's
own calls take (rules/compute/decide.py no_grad_call): a bank of 20,000 rows encoded every step to
mine negatives from, 21 of a 22-ms step. A teacher on the batch itself, a call under the share, or
an inference loop (no call under autograd) is not it."""

from __future__ import annotations

from gpubottle.evidence import CallSite, ModelCallCount
from gpubottle.rules.compute.decide import no_grad_call
from gpubottle.rules.compute.words import _no_grad_fix


def _calls(*sites: CallSite, counted_s: float = 0.030) -> ModelCallCount:
    return ModelCallCount("Sequential", "train.py:30", 3, 128, sites=list(sites), counted_s=counted_s)


BANK = CallSite("train.py:23", "enc", 1, 20000, False, 0.016)
TRAIN = CallSite("train.py:30", "enc", 2, 128, True, 0.004)


def test_a_bank_encoded_every_step_is_named_with_its_rows_and_time() -> None:
    found = no_grad_call(_calls(BANK, TRAIN))
    assert found == (BANK, 128, 0.030)
    fix = _no_grad_fix(*found)
    assert fix.where == "train.py:23" and "20,000 rows" in fix.text and "take 128" in fix.text
    assert "about 53% of a step" in fix.text and "every N steps" in fix.text and "Try it" in fix.text


def test_a_teacher_on_the_batch_a_small_share_or_an_inference_loop_is_not() -> None:
    teacher = CallSite("train.py:25", "teacher", 1, 128, False, 0.020)
    assert no_grad_call(_calls(teacher, TRAIN)) is None  # the batch's rows: needed every step
    assert no_grad_call(_calls(BANK, TRAIN, counted_s=0.2)) is None  # 8% of the step
    assert no_grad_call(_calls(BANK)) is None  # nothing under autograd: the calls are the work
    assert no_grad_call(None) is None
    assert no_grad_call(ModelCallCount("Sequential", None, 1, 128)) is None  # no sites recorded
