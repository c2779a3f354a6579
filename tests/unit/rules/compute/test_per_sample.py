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


def test_an_embedding_table_updated_whole_for_a_few_rows_gets_sparse_gradients_first() -> None:
    """Measured shape (a 500,000 x 64 table under Adam, 2,043 rows read a step, Adam's step 79% of
    a 241-ms step): sparse=True with SparseAdam, said with the change it makes to the training,
    before fused=True (which keeps the training and updates every row, faster)."""
    from gpubottle.evidence import DenseTable, OptimizerWork

    def ev_with(table: DenseTable, opt_share: float = 0.79):
        ev = evidence(steps=50, step_s=0.241, main=1.9, cores=2.0)
        ev.model_calls = ModelCallCount("Rec", "train.py:20", 1, 256, ["model"], tables=[table])
        ev.optimizer_work = OptimizerWork("torch.optim.adam.Adam", "train.py:17", 5, v.OPT_FOR_LOOP,
                                          True, opt_share * 0.241)
        return [x for f in diagnose(ev).findings for x in f.fixes]

    table = DenseTable("Rec.emb", 500_000, 64, 2043, 0.9999, "Adam")
    fixes = ev_with(table)
    assert fixes[0].text.startswith("Rec.emb (nn.Embedding of 500,000 x 64, 100% of Adam's parameters) "
                                    "gets a dense gradient"), fixes[0].text
    assert "SparseAdam is lazy" in fixes[0].text and fixes[0].where == "train.py:17"
    assert fixes[1].change == {"fused": [None, True]}
    sgd = DenseTable("Rec.emb", 500_000, 64, 2043, 0.9999, "SGD")
    assert "SGD and Adagrad take them too" in ev_with(sgd)[0].text
    for other, opt_share in ((DenseTable("Rec.emb", 500_000, 64, 30_000, 0.99, "Adam"), 0.79),
                             (DenseTable("Rec.emb", 500_000, 64, 2043, 0.3, "Adam"), 0.79),
                             (table, 0.1)):
        assert not any("dense gradient" in x.text for x in ev_with(other, opt_share))


def test_a_dense_table_under_sgd_is_said_where_backward_and_the_step_together_are_most_of_it() -> None:
    """emb_maxnorm's shape: a 200,000 x 64 and a 100,000 x 64 table under SGD, 1,024 ids a step:
    SGD's step 21% of a 28-ms step (under OPTIMIZER_LOOP_SHARE), backward 49% (the dense gradient
    is made there), so the sparse fix was not said; 19.2 s -> 5.7 s with sparse=True."""
    from gpubottle.evidence import AccountEntry, DenseTable, OptimizerWork

    def fixes(backward: float) -> list[str]:
        ev = evidence(steps=50, step_s=0.028, main=1.97, cores=2.0)
        tables = [DenseTable("MF.u", 200_000, 64, 1021, 0.667, "SGD"),
                  DenseTable("MF.i", 100_000, 64, 1017, 0.333, "SGD")]
        ev.model_calls = ModelCallCount("MF", "rec.py:19", 1, 1024, ["model"], tables=tables)
        ev.optimizer_work = OptimizerWork("torch.optim.sgd.SGD", "rec.py:15", 2, v.OPT_FOR_LOOP,
                                          True, 0.21 * 0.028)
        parts = {"backward": backward, "optimizer": 3.5, "forward": 12.7 - backward}
        ev.account = [AccountEntry(phase="train", seconds=16.2, share=0.85, parts=parts)]
        return [x.text for f in diagnose(ev).findings for x in f.fixes]

    said = fixes(8.0)
    assert said[0].startswith("MF.u (nn.Embedding of 200,000 x 64, 67% of SGD's parameters) gets a dense "
                              "gradient"), said[0]
    # (the item table, read as sparsely, is said with it: the 5.7 s was with both sparse)
    assert "; MF.i (100,000 x 64, 33%) likewise, its lookups reading 1,017. sparse=True on each" in said[0]
    assert not any("dense gradient" in x for x in fixes(2.0))  # backward and the step 34%: not this
