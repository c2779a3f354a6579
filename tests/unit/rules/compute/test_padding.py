"""compute-bound over batches padded to a fixed length, from made-up evidence shaped like a measured
run (tests/scripts/real_code/padded_reviews.py: reviews of 10-64 tokens padded to 256 in
__getitem__, 85% of each batch padding; 31-33 s as written, 3.7-4.2 s padded per batch). It read
compute-bound with torch.compile and bfloat16 as the fixes."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.rules import diagnose


def _finding(padding: list | None, collate_fn: str | None = None):
    ev = evidence(steps=50, step_s=0.25, main=1.0, cores=1.0)
    lo = ev.loaders[0]
    lo.batch_padding, lo.collate_fn, lo.dataset_class = padding, collate_fn, "Reviews"
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def _fixes(padding: list | None, collate_fn: str | None = None) -> list:
    return _finding(padding, collate_fn).fixes


def test_the_verdict_says_the_padding_with_it() -> None:
    assert _finding([0.8541, 256, 37, 64]).summary.endswith(
        ": the loop is compute-bound, and 85% of the positions it computes on are padding (batches "
        "padded to 256)")
    assert _finding(None).summary.endswith("the loop is compute-bound")


def test_the_padding_leads_at_getitem_with_its_share_and_lengths() -> None:
    first = _fixes([0.8541, 256, 37, 64])[0]
    assert first.text.startswith("each batch is padded to 256 positions, where its longest sample uses "
                                 "64 and the median 37: 85% of the positions the model computes on are "
                                 "padding (__getitem__ pads to a fixed length)"), first.text
    assert "pad_sequence(ids, batch_first=True" in first.text and first.where == "data.py:10"
    assert not first.change and first.expected is None


def test_a_collate_that_pads_is_named_and_little_padding_is_not_said() -> None:
    first = _fixes([0.7, 128, 30, 50], collate_fn="tokenize_batch")[0]
    assert "its collate_fn tokenize_batch pads" in first.text and first.where == "train.py:42"
    for little in ([0.3, 128, 80, 128], None):
        assert not any(x.text.startswith("each batch is padded") for x in _fixes(little))


def test_batches_each_padded_to_their_longest_are_drawn_from_length_buckets() -> None:
    """Per-batch padding (pad_sequence in a collate_fn) over lengths 5-300, shuffled: the first
    batches' lengths differ, so padding each to its longest is what it does already; the fix is
    batches of similar lengths (tests/scripts/real_code/padded_per_batch.py: 4.1-4.7 s an epoch,
    2.4 s from length buckets)."""
    ev = evidence(steps=50, step_s=0.07, main=1.0, cores=1.0)
    lo = ev.loaders[0]
    lo.batch_padding, lo.collate_fn, lo.padded_lengths = [0.51, 285, 126, 285], "collate", [285, 289, 286]
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    assert f.summary.endswith("51% of the positions it computes on are padding (batches padded each to "
                              "its longest sample)"), f.summary
    first = f.fixes[0]
    assert first.text.startswith("each batch is padded to its own longest sample (285 positions in the "
                                 "first, where the median sample uses 126: its lengths vary from batch to "
                                 "batch, 285, 289, 286 in the first 3)"), first.text
    assert "sort the indices by length" in first.text and "pad_sequence" not in first.text
    assert first.where == "train.py:42"  # the DataLoader's call, where a batch_sampler= goes
    # A fixed length read again in the next batches: the fixed-length fix, as before.
    lo.padded_lengths = [256, 256, 256]
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    assert "pad_sequence(ids, batch_first=True" in f.fixes[0].text


def test_batches_padded_each_to_their_longest_are_told_from_a_lower_share() -> None:
    """A batch padded to its own longest sample is said from PER_BATCH_PADDING_SHARE (30%), a fixed
    length only from PADDING_SHARE (50%): a transformer over 20-200 tokens at 48% padding trained
    1.7-2.0x faster from length buckets (tests/scripts/real_code/padded_transformer.py)."""
    def said(share: float, lengths: list[int]) -> bool:
        ev = evidence(steps=50, step_s=0.3, main=1.0, cores=1.0)
        lo = ev.loaders[0]
        lo.batch_padding, lo.collate_fn, lo.padded_lengths = [share, 200, 99, 200], "collate", lengths
        [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
        return any(x.text.startswith("each batch is padded") for x in f.fixes)

    per_batch, fixed = [200, 183, 198], [200, 200, 200]
    assert said(0.48, per_batch) and said(0.31, per_batch)
    assert not said(0.29, per_batch)  # lengths close together: little to gain
    assert not said(0.48, fixed) and said(0.5, fixed)  # a fixed length may be the model's own


def test_an_rnn_fed_packed_sequences_is_not_told_of_the_padding() -> None:
    ev = evidence(steps=50, step_s=0.25, main=1.0, cores=1.0)
    ev.loaders[0].batch_padding = [0.52, 299, 142, 299]
    ev.packs_sequences = "train.py:36"  # pack_padded_sequence: the LSTM skips the padding
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    assert "padding" not in f.summary and not any("padded" in x.text for x in f.fixes), f.fixes
