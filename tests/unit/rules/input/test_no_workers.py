"""num_workers=0 as a try, from made-up evidence shaped like a measured run (an in-memory
TensorDataset, 4 workers on 2 cores: the loop waited 3.5 ms of an 8 ms step, 2.8 ms of it taking
the batches, the workers' stacks on their index queue 88% of the time; none were 1.97x faster
under --try-fixes): offered only where the workers wait for work and taking batches costs."""

from __future__ import annotations

from factories import evidence

from gpubottle.evidence import Evidence, StackEvidence
from gpubottle.rules import diagnose


def _ev(idle: float, wait_cpu_s: float = 0.0028, getitem: str | None = None) -> Evidence:
    ev = evidence(step_s=0.008, wait_s=0.0035, wait_cpu_s=wait_cpu_s, num_workers=4, per_worker=0.13,
                  main=1.2, tree=1.7, cores=2, run_queue=0.11)
    ev.loaders[0].dataset_class, ev.loaders[0].dataset_getitem = "TensorDataset", getitem
    ev.stacks = StackEvidence(samples_main=120, samples_workers=200, worker_idle_fraction=idle)
    return ev


def _fixes(ev: Evidence) -> list:
    return [x for f in diagnose(ev).findings for x in f.fixes]


def test_idle_workers_whose_batches_cost_the_main_process_to_take_are_offered_none_as_a_try() -> None:
    fixes = _fixes(_ev(0.88))
    # The summary says what that fix is about (it said "the per-sample work must get cheaper").
    summary = diagnose(_ev(0.88)).findings[0].summary
    assert summary.endswith("while its workers wait for work 88% of theirs: the batches are made, "
                            "and taking them from the workers is the slow part"), summary
    [none] = [x for x in fixes if x.change.get("num_workers") == [4, 0]]
    assert none.text.startswith("the 4 workers wait for work 88% of the time while taking each of their "
                                "batches costs the main process 2.8 ms: try num_workers=0")
    assert "slower where making a batch costs more than taking it" in none.text
    assert none.where == "train.py:42" and none.expected_step_s is None
    # A library dataset: nothing of the user's returns the samples, so no "return one tensor" advice.
    assert not any(x.text.startswith("taking each batch from the workers") for x in fixes)
    mine = _fixes(_ev(0.88, getitem="data.py:10"))
    assert any(x.text.startswith("taking each batch from the workers") for x in mine)
    # Its batches already cross in as few pieces as they can ((x, y): two tensors): not said.
    # Where they are many (a dict of 20 per sample), said with their number.
    for tensors, said in ((2, False), (20, True)):
        ev = _ev(0.88, getitem="data.py:10")
        ev.loaders[0].batch_tensors, ev.loaders[0].batch_objects = tensors, 0
        got = [x.text for x in _fixes(ev) if x.text.startswith("taking each batch from the workers")]
        assert bool(got) == said, got
    assert "(20 tensors a batch, each crossing apart)" in got[0] and "fewer, larger tensors" in got[0]


def test_no_offer_of_none_where_making_a_batch_costs_more_than_the_wait_it_would_replace() -> None:
    """PNGs decoded by PIL in 2 workers: 8.2 ms of their CPU a batch against a 3.4-ms wait, the
    workers idle 68% on their queue: none would make the loop make each batch itself, a longer
    step. The try is kept where making is cheap (the TensorDataset: ~0.5 ms against 3.5)."""
    ev = _ev(0.88)
    assert ev.cpu is not None and ev.cpu.workers_cores is not None
    assert any(x.change.get("num_workers") == [4, 0] for x in _fixes(ev))
    ev.cpu.workers_cores = 1.6  # 1.6 cores x 8 ms: 12.8 ms of making a step against a 3.5-ms wait
    assert not any(x.change.get("num_workers") == [4, 0] for x in _fixes(ev))
    assert "taking them from the workers" not in diagnose(ev).findings[0].summary


def test_no_offer_of_none_where_workers_work_or_taking_batches_is_cheap() -> None:
    waiting = _ev(0.78)  # 8 workers of 0.1 ms reads (measured: none would be 2x slower)
    assert waiting.cpu is not None
    waiting.cpu.per_worker_cores = 0.064  # 0.29 of their making time on a CPU: they wait on reads
    for ev in (_ev(0.2), _ev(0.88, wait_cpu_s=0.0002), waiting):
        assert not any(x.change.get("num_workers", [1, 1])[1] == 0 for x in _fixes(ev))
    ev = _ev(0.88)
    ev.stacks = None  # without stacks the workers' waiting is not known
    assert not any(x.change.get("num_workers", [1, 1])[1] == 0 for x in _fixes(ev))


def test_a_getitem_whose_time_is_a_known_kind_is_said_first_without_generic_per_sample_advice() -> None:
    """Measured: 2 workers each torch.load-ing a .pt file per sample (96% of their samples in
    __getitem__, beneath it torch/serialization.py), preprocessing-bound. It read "move
    augmentation to batched tensor ops" and "return one tensor per sample" first; the cause is the
    file per sample."""
    from gpubottle.evidence import StackFrameShare

    ev = evidence(step_s=0.0174, wait_s=0.0073, wait_cpu_s=0.0029, num_workers=2, per_worker=0.51,
                  main=0.8, tree=1.34, cores=2, run_queue=0.31)
    ev.loaders[0].dataset_class, ev.loaders[0].dataset_getitem = "PtFiles", "data.py:9"
    kind = "reading tensors from files, one per sample (torch.load)"
    ev.stacks = StackEvidence(samples_main=60, samples_workers=49, worker_hot=[
        StackFrameShare("PtFiles.__getitem__", "data.py:9", 0.96, kind=kind)])
    fixes = _fixes(ev)
    assert fixes[0].text.startswith(f"PtFiles.__getitem__ (data.py:9) takes 96% of the loader workers' "
                                    f"time, most of it {kind}: pack the samples into one file")
    assert not any("augmentation" in x.text for x in fixes)
    # Work of no known kind: no hot fix; the dataset's own Python is named as what must get
    # cheaper (the run's cores are in use), not the generic augmentation advice.
    ev.stacks.worker_hot[0].kind = None
    fixes = _fixes(ev)
    assert not any("most of it" in x.text or "augmentation" in x.text for x in fixes)
    [own] = [x for x in fixes if x.text.startswith("PtFiles.__getitem__")]
    assert own.text.startswith("PtFiles.__getitem__ (data.py:9) takes 96% of the loader workers' time, "
                               "its own lines, no Python library frame beneath them (its Python, or "
                               "the C code of numpy or torch calls it makes): more workers would run it")
    assert ("or where they are already, the same math on the whole batch at once (a collate_fn, "
            "which runs in the workers:") in own.text


def test_work_the_remedy_removes_comes_before_more_workers() -> None:
    """Measured with pandas 3.1 (tabular.py in the session's note): a __getitem__ looking its row up
    with .iloc, num_workers=0, data-starved: 8.6 s as written, 10.1 s with the 2 workers first
    offered, 5.7 s with the columns made arrays once. The pandas remedy now leads."""
    from gpubottle.analysis.work_kinds import wasted
    from gpubottle.evidence import StackFrameShare

    rows = "looking rows up in a pandas DataFrame, one at a time"
    assert wasted(rows) and wasted("reading tensors from files, one per sample (torch.load)")
    assert not wasted("decoding images (PIL)") and not wasted(None)
    ev = evidence(step_s=0.0343, wait_s=0.0322, wait_cpu_s=0.0322, num_workers=0, main=1.0, tree=1.24,
                  cores=2)
    ev.loaders[0].dataset_class, ev.loaders[0].dataset_getitem = "Tabular", "data.py:9"
    ev.stacks = StackEvidence(samples_main=150, main_making=140, main_hot=[
        StackFrameShare("Tabular.__getitem__", "data.py:9", 0.98, kind=rows)])
    fixes = _fixes(ev)
    assert fixes[0].text.startswith(f"Tabular.__getitem__ (data.py:9) takes 98% of the time spent making "
                                    f"batches, most of it {rows}: turn the columns into arrays once")
    # Its share said where a kind is not clearly most (half to MOST_SHARE of the samples).
    ev.stacks.main_hot[0].kind_share = 0.49
    assert "takes 98% of the time spent making batches, 49% of it looking rows up" in _fixes(ev)[0].text
    ev.stacks.main_hot[0].kind_share = 0.8
    assert "batches, most of it looking rows up" in _fixes(ev)[0].text
    ev.stacks.main_hot[0].kind_share = None
    assert any("num_workers" in x.change for x in fixes[1:])
    ev.stacks.main_hot[0].kind = "decoding images (PIL)"  # spread by workers: they stay first
    assert "num_workers" in _fixes(ev)[0].change


def test_a_collate_fn_that_takes_the_time_is_named_without_getitem_advice() -> None:
    """Measured: a collate_fn tokenizing text in Python, num_workers=0, 75-90% of the time spent
    making batches (1 or 2 workers were slower: 6.5 and 5.7 s against 4.9 s). It read "move
    augmentation to batched tensor ops", advice about __getitem__, where there was none."""
    from gpubottle.evidence import StackFrameShare

    ev = evidence(step_s=0.0078, wait_s=0.0037, wait_cpu_s=0.0037, num_workers=0, main=1.9, tree=1.97,
                  cores=2)
    ev.loaders[0].dataset_class, ev.loaders[0].dataset_getitem = "Texts", "data.py:10"
    ev.loaders[0].collate_fn = "collate"
    ev.stacks = StackEvidence(samples_main=150, main_making=140,
                              main_hot=[StackFrameShare("collate", "data.py:11", 0.9)])
    fixes = _fixes(ev)
    assert fixes[0].text.startswith("collate (data.py:11) takes 90% of the time spent making batches")
    assert not any("augmentation" in x.text for x in fixes)
    assert "Its loop over the batch's samples" not in fixes[0].text  # no loop read from its source
    # Its loop over the samples doing the same work every epoch (analysis/collate_samples.py): that
    # work once per sample, in the dataset (measured on text_collate.py: 4.5x faster steps).
    ev.loaders[0].collate_loop, ev.loaders[0].collate_loop_text = "data.py:14", "for text, label in batch:"
    first = _fixes(ev)[0].text
    assert first.startswith("collate (data.py:11) takes 90% of the time spent making batches")
    assert ("Its loop over the batch's samples (data.py:14: `for text, label in batch:`) does the same "
            "work for a sample every epoch") in first and "in Texts.__init__" in first, first
    ev.loaders[0].collate_fn = None  # a helper of __getitem__'s (colour_jitter): the advice stays
    assert any("augmentation" in x.text for x in _fixes(ev))


def test_a_consumer_waiting_for_a_core_still_has_its_taking_of_batches_counted() -> None:
    """Measured on tensor_workers.py in two runs: 0.72 ms of the main thread's CPU in a 2.3-ms wait
    (60% of it waiting for a core), then 0.80 ms in a 2.9-ms wait (70% queued): 32% and 28% of the
    whole wait. The second read as if taking batches cost little; the part of the wait spent
    runnable behind the workers makes taking them no cheaper."""
    n, wait = 50, 0.0029
    ev = _ev(0.88, wait_cpu_s=0.0008)
    ev.steps.input_wait_s = [wait] * n
    ev.steps.input_wait_run_queue_s = [0.0020] * n
    assert any(x.change.get("num_workers") == [4, 0] for x in _fixes(ev))
    ev.steps.input_wait_run_queue_s = [0.0] * n  # the same CPU in a wait on the workers: no offer
    assert not any(x.change.get("num_workers") == [4, 0] for x in _fixes(ev))
    ev.steps.input_wait_run_queue_s = [None] * n  # not measured: against the whole wait, as before
    assert not any(x.change.get("num_workers") == [4, 0] for x in _fixes(ev))
