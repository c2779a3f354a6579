"""unsharded-data for workers, from made-up evidence: an IterableDataset that does not split its
stream, read by two or more workers, is said whatever the verdict, with the run's time predicted
only where it ended by finishing its epochs and the gain is worth saying."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import AccountEntry
from gpubottle.rules import diagnose


def _found(workers: int = 4, shards: bool | None = False, iterable: bool = True,
           stop: str = "completed", train_s: float = 60.0) -> list:
    ev = evidence(steps=50, num_workers=workers, cores=8.0)
    lo = ev.loaders[0]
    lo.iterable, lo.shards, lo.dataset_class, lo.dataset_getitem = iterable, shards, "Rows", "data.py:12"
    lo.epoch_batches = [400, 400]
    ev.run.duration_s, ev.run.stop_reason = 80.0, stop
    ev.account = [AccountEntry("startup", 20.0, 0.25), AccountEntry("train", train_s, train_s / 80)]
    return [f for f in diagnose(ev).findings if f.category == v.UNSHARDED_DATA]


def test_workers_each_iterating_the_whole_stream_are_said_at_iter_with_the_runs_time() -> None:
    [f] = _found()
    assert f.summary == ("each of the DataLoader's 4 workers iterates the whole Rows stream: every record "
                         "is trained on 4 times an epoch, and an epoch takes 4x the batches it needs")
    assert f.severity == "critical" and f.run_share == 0.5625  # 3/4 of 60 s in an 80 s run
    [fix] = f.fixes
    assert fix.where == "data.py:12" and fix.text.startswith(
        "give each worker its share of the stream (in Rows.__iter__: info = "
        "torch.utils.data.get_worker_info()")
    assert fix.expected_run_s == 35.0 and fix.expected == "run 80.0 s -> about 35.0 s (2.3x)"
    assert [x.value for x in f.evidence] == [4, 400]


def test_no_number_for_a_run_of_fixed_steps_or_a_small_gain_and_no_finding_when_split() -> None:
    [f] = _found(stop="steps")  # stopped by --steps: an epoch's length does not set its time
    assert f.fixes[0].expected_run_s is None
    [f] = _found(train_s=2.0)  # 1.5 s of an 80 s run: still the defect, no number
    assert f.fixes[0].expected_run_s is None and f.fixes[0].text
    assert _found(shards=True) == [] and _found(shards=None) == []  # split, or code not readable
    assert _found(workers=1) == [] and _found(iterable=False) == []
