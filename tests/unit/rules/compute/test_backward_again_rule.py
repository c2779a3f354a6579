"""compute-bound where each step runs backward twice through one forward of a shared trunk (two
losses backpropagated one by one, retain_graph=True), from made-up evidence shaped like a measured
run: a 1.8M-element trunk with two heads, Adam, 18-23 ms steps, backward 43% of them. It read
compute-bound with Adam's fused step and torch.compile, and nothing about the second backward;
summed, 3 epochs took 3.3-3.7 s against 3.7-4.1 s (with SGD a step 7.6-8.4 ms against 14.4-14.6)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import BackwardAgain, ModelCallCount
from gpubottle.rules import diagnose
from gpubottle.rules.thresholds import BACKWARD_AGAIN_SHARE


def _finding(again: BackwardAgain | None):
    ev = evidence(steps=180, step_s=0.018, main=1.0, cores=2.0)
    ev.model_calls = ModelCallCount("Sequential", "two_losses.py:18", 1, 64, ["trunk", "head_a", "head_b"],
                                    again=again)
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def _again(**kw: object) -> BackwardAgain:
    args: dict[str, object] = dict(name="trunk", site="two_losses.py:18", calls=1, passes=2,
                                   elements=1_837_568, pass_sites=["two_losses.py:22", "two_losses.py:23"],
                                   backward_share=0.43)
    args.update(kw)
    return BackwardAgain(**args)  # type: ignore[arg-type]


def test_the_second_backward_leads_with_the_losses_summed_at_the_first_backward() -> None:
    f = _finding(_again())
    assert f.summary.endswith("compute-bound, and it runs backward twice a step through one forward "
                              "of trunk"), f.summary
    first = f.fixes[0]
    assert first.text.startswith("each step runs backward twice through one forward of trunk (1,837,568 "
                                 "parameter elements, called at two_losses.py:18; backward called at "
                                 "two_losses.py:22 and two_losses.py:23)"), first.text
    assert "(loss_a + loss_b).backward()" in first.text and "PCGrad" in first.text
    assert "Backward is 43% of each step here" in first.text and "try it and time it" in first.text
    assert first.where == "two_losses.py:22" and not first.change and first.expected is None


def test_one_line_called_three_times_is_said_so() -> None:
    first = _finding(_again(passes=3, pass_sites=["mt.py:40", "mt.py:40", "mt.py:40"])).fixes[0]
    assert "runs backward 3 times" in first.text and "backward called at mt.py:40, 3 times" in first.text


def test_not_said_where_backward_is_a_small_part_or_each_pass_has_its_forward() -> None:
    for again in (_again(backward_share=BACKWARD_AGAIN_SHARE / 2), _again(backward_share=None),
                  _again(calls=2), None):
        f = _finding(again)
        assert not any("runs backward" in x.text for x in f.fixes), again
        assert "runs backward" not in f.summary
