"""Waits that are the first epoch's (a dataset that caches what it read once): the worker fix keeps
its workers persistent, says why, and promises no number (measured: 2 workers without
persistent_workers 2.9x slower than none; 10 workers 3.4 s where 8.2 -> 5.6 s had been promised)."""

from __future__ import annotations

from gpubottle.evidence import LoaderInfo
from gpubottle.report import Fix
from gpubottle.rules.input.first_epoch import cached_worker_fixes, first_epoch_reads
from gpubottle.rules.input.fix_words import IO_TEXT
from gpubottle.rules.input.fixes import io_fix


def test_a_first_epoch_that_waits_far_more_than_the_rest_is_told() -> None:
    lo = LoaderInfo(id=1, epoch_wait_s=[0.0684, 0.0002, 0.0003, 0.0002])
    assert first_epoch_reads(lo) == (0.0684, 0.0002)
    for waits in ([0.05], [0.01, 0.008, 0.009], [0.0005, 0.00001]):  # one epoch; alike; tiny
        assert first_epoch_reads(LoaderInfo(id=1, epoch_wait_s=waits)) is None


def test_the_worker_fix_for_a_caching_dataset_is_a_try_with_persistent_workers() -> None:
    lo = LoaderInfo(id=1, num_workers=0, persistent_workers=False)
    workers = Fix(text="load batches in parallel with the training step: num_workers=10",
                  where="train.py:28", change={"num_workers": [0, 10]}, expected="step 10 ms -> 1 ms",
                  expected_step_s=0.001, expected_run_s=5.6)
    other = Fix(text="the time is in reading", where="train.py:19")
    fixed, kept = cached_worker_fixes([workers, other], lo)
    assert kept is other
    # The I/O fix says the time is the first epoch's reads where it is (the dataset caches already).
    lo.epoch_wait_s = [0.0684, 0.0002, 0.0003]
    assert io_fix(lo).text.startswith("the time is the first epoch's reads")
    assert io_fix(LoaderInfo(id=2, epoch_wait_s=[0.01, 0.01])).text == IO_TEXT
    assert fixed.text.startswith("try: load batches") and "persistent_workers=True" in fixed.text
    assert fixed.change == {"num_workers": [0, 10], "persistent_workers": [False, True]}
    assert fixed.expected is None and fixed.expected_step_s is None and fixed.expected_run_s is None
    lo.persistent_workers = True  # already: nothing to add but the words
    (again,) = cached_worker_fixes([workers], lo)
    assert again.change == {"num_workers": [0, 10]}
