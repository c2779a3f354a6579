"""compute-bound where the model's attention is written by hand, from made-up evidence shaped like a
measured run (tests/scripts/real_code/hand_attention.py: its statements' forward 29% of the main
thread's samples, the step 1.35x faster with scaled_dot_product_attention): the fused call leads,
before faster math, named at the softmax's line; not below the share that counts."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import StackEvidence, StackFrameShare
from gpubottle.rules import diagnose
from gpubottle.rules.thresholds import HAND_ATTENTION_SHARE


def _finding(share: float):
    ev = evidence(steps=20, step_s=0.56, main=1.97, cores=2.0, loader=False)
    ev.stacks = StackEvidence(samples_main=200, main_phases={"forward": 0.46, "backward": 0.52},
                              main_hand_attention=StackFrameShare("CausalSelfAttention.forward",
                                                                  "model.py:33", share))
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def test_the_fused_call_leads_at_the_softmaxs_line() -> None:
    f = _finding(0.29)
    assert f.summary.endswith("and its attention is written by hand where one fused call computes it")
    first = f.fixes[0]
    assert first.where == "model.py:33"
    assert first.text.startswith("the attention in CausalSelfAttention.forward is written by hand"), \
        first.text
    assert "torch.nn.functional.scaled_dot_product_attention(q, k, v)" in first.text
    assert "is_causal=True" in first.text and "29% of the main thread's samples" in first.text
    assert "try it and time it" in first.text
    assert f.fixes[1].text.startswith("run the math faster"), f.fixes[1].text


def test_not_said_below_the_share_that_counts() -> None:
    f = _finding(HAND_ATTENTION_SHARE / 2)
    assert not any("scaled_dot_product_attention" in x.text for x in f.fixes), f.fixes
    assert "by hand" not in f.summary
