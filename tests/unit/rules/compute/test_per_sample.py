"""compute-bound with the model called once per sample, from made-up evidence: said in the summary,
the batched call is the first fix and faster math is not offered; a GAN's two calls a step, an RNN
cell per timestep (rows = the batch) are not per-sample."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import ModelCallCount
from gpubottle.rules import diagnose


def _compute(m: ModelCallCount | None):
    ev = evidence(steps=50, step_s=0.0054, main=1.0, cores=2.0)
    ev.model_calls = m
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def test_a_model_called_once_per_sample_is_offered_the_batched_call_first_and_no_faster_math() -> None:
    f = _compute(ModelCallCount("Sequential", "train.py:12", 32, 1))
    assert f.summary == ("the main process computes 100% of step time, calling Sequential once per sample: "
                         "32 calls of 1 row a step, each paying every layer's per-call cost for one sample")
    assert f.fixes[0].text.startswith("call Sequential once on the whole batch instead of once per sample")
    assert f.fixes[0].where == "train.py:12"
    assert not any(x.text.startswith("run the math faster") for x in f.fixes)


def test_few_calls_or_calls_of_the_whole_batch_are_not_per_sample() -> None:
    for m in (ModelCallCount("Generator", "gan.py:40", 2, 64), ModelCallCount("GRUCell", "rnn.py:9", 50, 32),
              ModelCallCount("Net", "train.py:12", 3, 1), None):
        f = _compute(m)
        assert "once per sample" not in f.summary
        assert f.fixes[-1].text.startswith("run the math faster")


def test_a_forward_repeated_on_the_same_batch_is_the_first_fix_at_the_repeats_line() -> None:
    """Measured shape (tests/scripts/real_code/second_forward.py): model(xb) for the loss, then
    model(xb).argmax(1) after the step, autograd on: 2 calls of the batch a step."""
    f = _compute(ModelCallCount("Sequential", "train.py:21", 2, 100, ["model"],
                                ["train.py:21", "train.py:25"], True))
    first = f.fixes[0]
    assert first.text.startswith("Sequential runs its forward twice a step on the same batch: at "
                                 "train.py:21 and again at train.py:25 with autograd on"), first.text
    assert first.where == "train.py:25" and "R-Drop" in first.text and first.expected is None
    assert f.fixes[-1].text.startswith("run the math faster")  # (the math of the one forward left)
    under = _compute(ModelCallCount("Sequential", "train.py:21", 2, 100, [], ["train.py:21", "t.py:9"],
                                    False))
    assert "(under no_grad)" in under.fixes[0].text
    assert not any("twice a step" in x.text for x in _compute(ModelCallCount("Net", "t.py:3", 2, 64)).fixes)
