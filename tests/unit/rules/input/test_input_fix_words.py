"""Every sentence of the input fixes, once each; the numbers in them are computed and tested by their
decisions (test_input_words.py, test_rules.py) and timed in tests/check_fixes."""

from __future__ import annotations

from gpubottle.evidence import StackFrameShare
from gpubottle.rules.input import fix_words as words


def test_workers_that_start_again_every_epoch() -> None:
    assert words.restart_text("train.py:30", 5, "spawn") == (
        "the DataLoader at train.py:30 is built anew 5 times (every epoch), so its workers start "
        "again every epoch (spawn: each re-imports the script and torch): build it once, before the "
        "epoch loop, with persistent_workers=True (persistent_workers alone, on a loader still "
        "built every epoch, changes nothing)")
    assert words.restart_text(None, 1, "fork").startswith("the DataLoader's workers stop at the end")
    # A worker_init_fn runs in every worker at every start: once per worker once they persist.
    assert words.restart_text(None, 1, "fork", "open_index (train.py:18)").endswith(
        "persistent_workers=True (open_index, the worker_init_fn, then runs once per worker, not once "
        "per epoch)")
    assert words.restart_expected(0.1, 0.05, 1.2) == (
        "step 100.0 ms -> about 50.0 ms (2.0x), about 1200.0 ms saved per epoch")


def test_why_this_many_workers() -> None:
    assert words.worker_why(16, 10, True, False, 2.0, None) == (
        " (the wait would vanish at about 16, but the CPU the run has limits the gain: the rest must "
        "come from cheaper loading)")
    assert words.worker_why(16, 10, False, False, 2.0, None) == " (about 16 would hide the wait entirely)"
    assert words.worker_why(4, 4, False, True, 2.0, None) == (
        " (loading waits on I/O, so workers overlap it without needing a core each)")
    assert words.worker_why(4, 4, False, False, None, None) == (
        " (enough to make batches faster than the step uses them)")
    assert words.worker_why(4, 4, False, False, 8.0, 1.5) == (
        " (the 8 cores the run may use have room for them); other programs used 1.5 cores "
        "meanwhile: while they run, expect less")


def test_the_worker_fix_promised_or_to_try() -> None:
    shard = words.shard_text("Stream")
    assert shard.startswith("; first give each worker its share of the stream (in Stream.__iter__: ")
    assert "(in the __iter__: " in words.shard_text(None)
    assert words.worker_text(4, " (why)", "") == (
        "load batches in parallel with the training step: num_workers=4 (why)")
    assert words.worker_expected(0.1, 0.04, 0.6, 0.0, False) == (
        "step 100.0 ms -> about 40.0 ms (2.5x), input wait 60% -> 0.0%")
    assert words.worker_expected(0.1, 0.04, 0.6, 0.0, True).startswith(
        "once each worker reads its own share: ")
    assert words.worker_try_text(4, 2.5, words.ranks_caveat(2), "") == (
        "try num_workers=4: loading in parallel with the step could make it up to 2.5x faster, but "
        "the 2 ranks on this machine share its cores and their workers compete (set it on every "
        "rank: they run the same code): time it")


def test_what_more_workers_cannot_fix() -> None:
    text = words.receive_text(0.0021)
    assert text.startswith("taking each batch from the workers costs the main process 2.1 ms of CPU")
    assert "num_workers=0" not in text
    top = StackFrameShare("augment", "data.py:12", 0.62)
    assert words.hot_text(top, [StackFrameShare("decode", "data.py:30", 0.21)], in_workers=True) == (
        "augment (data.py:12) takes 62% of the loader workers' time: make it cheaper first (then "
        "decode 21%)")
    assert words.hot_text(top, [], in_workers=False).endswith(
        "of the time spent making batches: make it cheaper first")
    assert words.cost_fact(0.012, 0.004, 3.0) == (
        "each batch costs 12.0 ms of CPU to prepare; to keep up with a 4.0 ms step the pipeline "
        "needs 3 cores")
    assert words.cheaper_text("Images", 2.04).startswith(
        "make per-sample work cheaper: Images.__getitem__ must get about 2.0x cheaper per batch")
    # An IterableDataset has no __getitem__: its samples come from __iter__
    # (about as dear as the step's computation: "about 1.1x cheaper" read as no change)
    assert words.cheaper_text("Stream", 1.1, iterable=True).startswith(
        "make per-sample work cheaper: Stream.__iter__ must get cheaper than the step's own "
        "computation, which it now matches (1.10x of it) per batch")
    # The script's own collate_fn the hot function: it, not __getitem__, must get cheaper
    assert words.cheaper_text("Seqs", 1.5, collate="collate").startswith(
        "make the batch work cheaper: collate must get about 1.5x cheaper per batch")
    assert "pad_sequence" in words.cheaper_text("Seqs", 1.5, collate="collate")
    assert words.fewer_workers_text(8, 2.0) == (
        "num_workers=8 is more than the 2 cores available: if the workers compute rather than wait, "
        "fewer may do as well with less memory; try it and compare")
