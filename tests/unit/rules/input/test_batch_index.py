"""A TensorDataset fetched a sample at a time, from made-up evidence shaped like measured runs
(200,000 x 32 rows in batches of 512 on 2 cores, a 2-layer MLP: the loop waited 2.2-2.6 ms of a
3.4-3.9 ms step with no workers, 2.0 ms with 2). It read data-starved with "try num_workers=2" first,
and with 2 workers "try num_workers=0": as written 4.1-4.3 s for 3 epochs, 2 workers 4.2-4.3 s, the
batches indexed whole 1.6-2.0 s (3.1 s with 2 workers beside that)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.rules import diagnose
from gpubottle.rules.input.fix_words import BATCHED_TEXT


def _ev(workers: int = 0, indexable: bool | None = True, collate_fn: str | None = None) -> Evidence:
    if workers:
        ev = evidence(step_s=0.0034, wait_s=0.0020, wait_cpu_s=0.0008, num_workers=workers,
                      per_worker=0.45, main=0.75, tree=1.18, cores=2)
    else:
        ev = evidence(step_s=0.0035, wait_s=0.0024, wait_cpu_s=0.0024, main=1.0, tree=1.0, cores=2)
    lo = ev.loaders[0]
    lo.batch_size, lo.dataset_class, lo.dataset_getitem = 512, "torch.utils.data.dataset.TensorDataset", None
    lo.batch_indexable, lo.sampler, lo.drop_last = indexable, "RandomSampler", False
    lo.collate_fn = collate_fn
    lo.batch_tensors = 2
    return ev


def test_without_workers_the_batches_indexed_whole_lead_and_no_workers_are_offered() -> None:
    f = diagnose(_ev()).findings[0]
    assert f.category == v.PREPROCESSING_BOUND, f  # (more workers would not hide it: measured)
    assert "fetches TensorDataset a sample at a time and stacks 512 of them" in f.summary, f.summary
    first = f.fixes[0]
    assert first.text.startswith("the DataLoader fetches TensorDataset one sample at a time: 512 "
                                 "__getitem__ calls and a stack of 512 rows for each batch "
                                 "(~2.4 ms a batch"), first.text
    assert ("DataLoader(dataset, batch_size=None, sampler=BatchSampler(RandomSampler(dataset), 512, "
            "drop_last=False))") in first.text and "try it and time it" in first.text
    assert first.change == {"batch_index": [False, True]} and first.where == "train.py:42"
    assert first.expected is None and first.expected_step_s is None  # a try: --try-fixes times it
    texts = [x.text for x in f.fixes]
    assert not any("num_workers" in x.change for x in f.fixes), texts
    assert BATCHED_TEXT not in texts  # no augmentation in a TensorDataset
    assert not any(t.startswith("the time is the loader indexing") for t in texts)  # said once


def test_with_workers_it_says_none_with_it_and_theirs_is_the_work() -> None:
    f = diagnose(_ev(workers=2)).findings[0]
    first = f.fixes[0]
    assert first.change == {"batch_index": [False, True], "num_workers": [2, 0]}, first.change
    assert "in each of the 2 workers, which then hands the batch across" in first.text, first.text
    assert "instead with num_workers=0" in first.text and "slower than none" in first.text
    assert not any(x.change.get("num_workers", [0, 0])[1] > 2 for x in f.fixes)  # never more workers


def test_sequential_order_and_drop_last_are_kept_in_the_sampler() -> None:
    ev = _ev()
    ev.loaders[0].sampler, ev.loaders[0].drop_last = "SequentialSampler", True
    first = diagnose(ev).findings[0].fixes[0]
    assert "BatchSampler(SequentialSampler(dataset), 512, drop_last=True)" in first.text, first.text


def test_not_said_for_a_collate_of_the_scripts_or_a_dataset_that_takes_no_list() -> None:
    for ev in (_ev(collate_fn="pad_batch"), _ev(indexable=False)):
        texts = [x.text for f in diagnose(ev).findings for x in f.fixes]
        assert not any("BatchSampler" in t for t in texts), texts
        assert not any("batch_index" in x.change for f in diagnose(ev).findings for x in f.fixes)


def test_not_said_for_a_loader_a_library_built() -> None:
    ev = _ev()
    ev.loaders[0].built_by = "transformers.trainer.Trainer.get_train_dataloader"
    assert not any("batch_index" in x.change for f in diagnose(ev).findings for x in f.fixes)


def test_a_saved_run_without_the_flag_keeps_the_old_guess() -> None:
    texts = [x.text for f in diagnose(_ev(indexable=None)).findings for x in f.fixes]
    assert not any(t.startswith("the DataLoader fetches") for t in texts), texts


def test_a_batch_sampler_passed_as_batch_sampler_goes_to_sampler_with_no_batch_size() -> None:
    """`DataLoader(ds, batch_sampler=BatchSampler(RandomSampler(ds), 512, drop_last=False))` still
    fetches a sample at a time (measured: 2.17x a step once passed as sampler= with batch_size=None,
    --try-fixes's trial, 2.6 ms a batch)."""
    ev = _ev()
    ev.loaders[0].batch_sampler = "BatchSampler"
    first = diagnose(ev).findings[0].fixes[0]
    assert first.change == {"batch_index": [False, True]}, first.change
    assert ("your BatchSampler passed as sampler= with batch_size=None, not as batch_sampler= "
            "(DataLoader(dataset, batch_size=None, sampler=BatchSampler(RandomSampler(dataset), 512, "
            "drop_last=False)))") in first.text, first.text


def test_the_scripts_own_weighted_sampler_is_the_one_grouped() -> None:
    """Imbalanced classes, `DataLoader(TensorDataset(x, y), batch_size=256,
    sampler=WeightedRandomSampler(...))`: it read "move augmentation to batched tensor ops" (there is
    none). Measured: 6.5-6.9 s a run, 4.5-4.7 with the batches indexed whole; --try-fixes' trial
    1.96x a step."""
    ev = _ev()
    ev.loaders[0].sampler = "WeightedRandomSampler"
    first = diagnose(ev).findings[0].fixes[0]
    assert first.change == {"batch_index": [False, True]}, first.change
    assert ("DataLoader(dataset, batch_size=None, sampler=BatchSampler(sampler, 512, drop_last=False)) "
            "(`sampler`: your WeightedRandomSampler, which still draws the indices)") in first.text, \
        first.text


def test_the_loops_other_code_is_never_read_as_making_batches() -> None:
    """Gradient accumulation over 8 batches of 16 (accum.py-like): py-spy caught no sample of the
    main process in the loader's work (fetches of 0.16 ms among the steps' model work), so its hot
    list fell back to the loop's other code, and the clip was said to take "100% of the time spent
    making batches"."""
    from gpubottle.evidence import StackEvidence, StackFrameShare

    ev = _ev()
    clip = "clipping gradients (torch.nn.utils.clip_grad_*)"
    ev.stacks = StackEvidence(samples_main=74, main_phases={"data": 0.0, "other": 0.13}, main_making=0,
                              main_hot=[StackFrameShare("<module>", "accum.py:17", 1.0, kind=clip)])
    texts = [x.text for f in diagnose(ev).findings for x in f.fixes]
    assert not any("making batches" in t and "clipping" in t for t in texts), texts
    assert texts[0].startswith("the DataLoader fetches TensorDataset one sample at a time"), texts


def _gathered(backwards_a_step: int) -> Evidence:
    """64 batches of batch_size=1 a step (manual_accum's shape: 60,000 rows, 2.1-ms steps waiting
    1.2 ms), with one backward a step (gathered by torch.cat) or 64 (gradients accumulated)."""
    ev = evidence(steps=100, step_s=0.0021, wait_s=0.0012, wait_cpu_s=0.0012, main=1.0, tree=1.0, cores=2)
    lo = ev.loaders[0]
    lo.batch_size, lo.dataset_class, lo.dataset_getitem = 1, "torch.utils.data.dataset.TensorDataset", None
    lo.batch_indexable, lo.sampler, lo.drop_last, lo.batch_tensors = True, "RandomSampler", False, 2
    lo.batches = 64 * 100
    ev.steps.backward_calls = backwards_a_step * 100
    return ev


def test_batches_the_loop_gathers_into_one_are_made_by_the_loader_not_accumulated() -> None:
    """Measured: the loop 1.9 s of training; batch_size=64 1.0 s; a BatchSampler of 64 0.9 s."""
    f = diagnose(_gathered(1)).findings[0]
    wait = f.evidence[0].text
    assert "the 64 batches it gathers into each step's batch" in wait and "accumulated" not in wait, wait
    first, second = f.fixes[:2]
    assert "gathers them into one batch itself" in first.text and "batch_size=64" in first.text, first
    assert not first.change  # (no patch: the loop's gathering goes with it)
    assert "BatchSampler(RandomSampler(dataset), 64," in second.text, second.text
    assert "stacks 64 of them for each batch" in f.summary, f.summary
    accumulated = diagnose(_gathered(64)).findings[0]
    assert "(gradients accumulated over them)" in accumulated.evidence[0].text
    assert not any("gathers them" in x.text for x in accumulated.fixes)
