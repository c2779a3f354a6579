"""torch's default_collate as the cost of making batches, from made-up evidence shaped like measured
runs (tests/scripts/real_code/number_lists.py, 2 cores: each sample a list of 256 Python floats,
batch 64, 257 tensors a batch; the loop waited 3.9 ms of a 6.5-ms step, 80 of 88 making samples in
collate without workers; with 2 workers 59 of 67, and taking each batch cost 60 ms). It read
"Rows.__getitem__ must get 2x cheaper (decode at lower resolution...)", "move augmentation to
batched tensor ops" and "num_workers=2 may gain a little": __getitem__ costs nothing, there is no
augmentation, and 2 workers took 174 s where none took 5."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, StackEvidence
from gpubottle.rules import diagnose
from gpubottle.rules.input.fix_words import BATCHED_TEXT


def _ev(workers: int = 0, collate: int = 80, making: int = 88, tensors: int = 257,
        collate_fn: str | None = None) -> Evidence:
    if workers:
        ev = evidence(step_s=0.132, wait_s=0.103, wait_cpu_s=0.062, num_workers=workers,
                      per_worker=0.28, main=0.9, tree=1.25, cores=2)
        ev.stacks = StackEvidence(samples_main=500, samples_workers=1300, worker_idle_fraction=0.95,
                                  worker_making=making, worker_collate=collate)
    else:
        ev = evidence(step_s=0.0065, wait_s=0.0039, wait_cpu_s=0.0039, main=1.7, tree=1.7, cores=2)
        ev.stacks = StackEvidence(samples_main=145, main_phases={"data": 0.6}, main_making=making,
                                  main_collate=collate)
    lo = ev.loaders[0]
    lo.batch_size, lo.dataset_class, lo.batch_tensors, lo.batch_objects = 64, "Rows", tensors, 0
    lo.collate_fn = collate_fn
    return ev


def _texts(ev: Evidence) -> list[str]:
    return [x.text for f in diagnose(ev).findings for x in f.fixes]


def test_a_batch_collated_position_by_position_gets_one_tensor_a_sample_first() -> None:
    f = diagnose(_ev()).findings[0]
    assert f.category == v.PREPROCESSING_BOUND
    first = f.fixes[0]
    assert first.text.startswith("torch's default_collate takes 91% of making each batch: it builds "
                                 "257 tensors a batch of 64, one for each position"), first.text
    assert "self.x = torch.tensor(rows)" in first.text and "Try it and time it" in first.text
    assert first.where == "data.py:10" and first.expected is None and not first.change
    texts = _texts(_ev())
    # Not the dataset's own work, nor augmentation, nor workers that would hand over 257 tensors.
    assert BATCHED_TEXT not in texts
    assert not any(t.startswith("make per-sample work cheaper") for t in texts), texts
    assert not any("num_workers" in t for t in texts), texts


def test_with_workers_the_crossing_is_said_in_it_and_none_stays_a_try_after_it() -> None:
    f = diagnose(_ev(workers=2, collate=59, making=67)).findings[0]
    first = f.fixes[0]
    assert first.text.startswith("torch's default_collate takes 88% of making each batch"), first.text
    assert "each crosses from the workers apart: taking a batch costs the main process 62.0 ms" in first.text
    # The generic "return fewer, larger tensors" is not said again; none is still a try.
    assert not any(x.text.startswith("taking each batch from the workers") for x in f.fixes)
    assert any(x.change.get("num_workers") == [2, 0] for x in f.fixes[1:])
    assert "taking them from the workers is the slow part" in f.summary


def test_not_said_for_few_tensors_a_user_collate_fn_or_too_few_samples_in_collate() -> None:
    for ev in (_ev(tensors=2), _ev(collate_fn="data.pad_collate"), _ev(collate=30),
               _ev(collate=8, making=9, tensors=40)):
        texts = _texts(ev)
        assert not any("default_collate" in t for t in texts), texts
    # (the per-sample advice is back where collation is not the cost)
    assert any(t.startswith("make per-sample work cheaper") for t in _texts(_ev(collate=30)))


def test_too_few_samples_in_a_short_run_and_many_tensors_say_it_from_the_count() -> None:
    """A 150-step run of the measured shape had too few stack samples for the share, and read
    "try num_workers=2" first (2 workers: 174 s where none took 5): 257 tensors a batch say it."""
    f = diagnose(_ev(collate=3, making=4)).findings[0]
    first = f.fixes[0]
    assert first.text.startswith("torch's default_collate is likely most of making each batch (too "
                                 "few stack samples to measure it): it builds 257 tensors a batch "
                                 "of 64"), first.text
    assert not any("num_workers" in x.change for x in f.fixes), [x.text for x in f.fixes]


def test_the_scripts_own_collate_as_the_hot_function_is_what_must_get_cheaper() -> None:
    """A padding collate_fn writing each time step apart (tests/scripts shape: pad_collate, 2
    cores, 9.2 ms of a 15.3-ms step in it, every making sample in it) read "Seqs.__getitem__ must
    get about 1.5x cheaper", where __getitem__ returns a stored tensor: the collate must."""
    from gpubottle.analysis.work_kinds import ELEMENT_WRITES
    from gpubottle.evidence import StackFrameShare

    for kind in (ELEMENT_WRITES, None):
        ev = _ev(collate_fn="pad_collate.collate", collate=0, tensors=3)
        ev.loaders[0].dataset_class = "Seqs"
        ev.stacks.main_hot = [StackFrameShare("collate", "pad_collate.py:28", 1.0, kind=kind)]  # type: ignore[union-attr]
        texts = _texts(ev)
        cheaper = [t for t in texts if "must get about" in t]
        assert len(cheaper) == 1 and cheaper[0].startswith(
            "make the batch work cheaper: collate must get about"), texts
        assert ("the fix above says what its time goes to" in cheaper[0]) is (kind is not None), cheaper
        fix = next(x for f in diagnose(ev).findings for x in f.fixes if x.text == cheaper[0])
        assert fix.where == "pad_collate.py:28"
