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


def test_the_one_loss_takes_the_targets_by_the_scripts_own_name() -> None:
    s = _s([32, 128, 2000])
    s.call, s.target, s.function = "self.ce", "targets", "SeqLoss.forward"
    text = slice_fix(s).text
    assert "(in SeqLoss.forward)" in text and "self.ce(logits.reshape(-1, 2000), targets.reshape(-1))" in text


def test_the_same_loop_read_as_rows_in_a_forward_keeps_the_one_loss_fix() -> None:
    """A loss module's forward adding up time steps (`self.ce(logits[:, t], targets[:, t])`): its
    loop also reads to the stacks as a forward computing a row at a time (its backward most of
    the cost). The one loss over the whole tensor is the cure, not index_add_ over rows; a row
    loop elsewhere keeps its own finding."""
    from factories import evidence

    from gpubottle import vocabulary as v
    from gpubottle.evidence import ModelCallCount, StackEvidence, StackFrameShare
    from gpubottle.rules import diagnose

    def first(row_site: str) -> tuple[str, str]:
        ev = evidence(steps=20, step_s=0.4, main=1.0, cores=2.0)
        ev.model_calls = ModelCallCount("LanguageModel", "lm.py:53", 1, 24, ["model"])
        ev.model_calls.slice_loss = SliceLoss("lm.py:25", "for t in range(logits.size(1)):", "logits",
                                              "logits[:, t]", 1, "SequenceLoss.forward", [24, 96, 3000],
                                              "self.ce", "targets")
        loop = StackFrameShare("SequenceLoss.forward", row_site, 0.03, row_loop=row_site,
                               row_loop_text="for t in range(logits.size(1)):")
        ev.stacks = StackEvidence(samples_main=200, main_phases={"forward": 0.05, "backward": 0.9},
                                  main_forward_loop=loop)
        [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
        return f.summary, f.fixes[0].text

    summary, text = first("lm.py:25")
    assert "96 slices of logits one by one" in summary and "Python loop" not in summary, summary
    assert "self.ce(logits.reshape(-1, 3000), targets.reshape(-1))" in text, text
    summary, _ = first("lm.py:40")
    assert "Python loop of SequenceLoss.forward" in summary, summary
