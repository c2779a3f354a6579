"""rules/compute/slice_loss.py: a loss added up over the output's slices is said where the slices
are many and their full-size gradients large, with one loss over the whole tensor; a few slices,
or a small output, are not said."""

from __future__ import annotations

from gpubottle.evidence import SliceLoss
from gpubottle.rules.compute.slice_loss import said, slice_fix, written


def _s(shape: list[int] | None, dim: int = 1) -> SliceLoss:
    return SliceLoss("tag.py:38", "for i in range(T):", "logits", "logits[:, i, :]", dim, None, shape, "crit")


def test_many_slices_of_a_large_output_are_said_with_one_loss() -> None:
    s = _s([32, 128, 2000])
    assert written(s) == 128 * 32 * 128 * 2000 * 4
    assert said(s) is s
    fix = slice_fix(s)
    assert fix.where == "tag.py:38"
    assert "crit(logits.reshape(-1, 2000), y.reshape(-1))" in fix.text and "128 a step" in fix.text, fix.text
    assert "try it and time it" in fix.text


def test_few_slices_a_small_output_or_no_shape_are_not_said() -> None:
    assert said(_s([64, 4, 100000])) is None  # 4 slices
    assert said(_s([64, 10], dim=1)) is None  # 10 slices of 2.5 KB
    assert said(_s(None)) is None and said(_s([32, 128, 2000], dim=5)) is None
    assert said(None) is None
