"""A loader iterated anew for every batch (`x, y = next(iter(loader))` in the loop): told from the
probes' counts, said with the line that calls iter(), and never given the persistent-workers or
more-workers fixes, which cannot help it (rules/input/iterators.py)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.rules import diagnose


def _per_batch(*, sampler: str = "RandomSampler", iterators: int = 150, batches: int = 150,
               dataset_len: int = 4096):
    # 150 steps of 60 ms, 12 ms of each waiting for the new iterator's first batch, each iter()
    # 29 ms (two workers starting): measured on tests/scripts/real_code/next_iter.py's shape.
    ev = evidence(steps=150, step_s=0.06, wait_s=0.012, num_workers=2, cores=2.0)
    lo = ev.loaders[0]
    lo.iterators, lo.batches, lo.dataset_len, lo.sampler = iterators, batches, dataset_len, sampler
    lo.iter_build_s, lo.iter_site = 0.029 * iterators, "train.py:50"
    ev.steps.start_up_wait_s = [0.01] * 150  # (the workers' start shows as restarts too)
    return ev


def test_an_iterator_per_batch_is_the_finding_with_its_own_fix():
    r = diagnose(_per_batch())
    f = r.findings[0]
    assert r.primary == v.DATA_STARVED and f.category == v.DATA_STARVED
    assert f.summary.startswith("the loop starts a new iteration of its DataLoader for every batch "
                                "(train.py:50): 68% of each step")
    assert f.share == 0.6833 and f.severity == "critical"
    [fix] = f.fixes
    assert fix.where == "train.py:50" and fix.text.startswith("build the iterator once, before the loop")
    assert fix.expected_step_s is None and not fix.change  # a try: no number promised
    assert not any("persistent_workers" in x.change or "num_workers" in x.change
                   for g in r.findings for x in g.fixes)
    said = f.evidence[0].text
    assert "iterated anew 150 times for 150 training batches (1 a time), from train.py:50" in said


def test_without_shuffling_every_step_trains_on_the_same_first_batch():
    f = diagnose(_per_batch(sampler="SequentialSampler")).findings[0]
    assert f.summary.endswith("; and every step gets the same first batch")
    assert any("so each step trains on the same 32 samples" in e.text for e in f.evidence)
    assert "instead of its first batch" in f.fixes[0].text


def test_epochs_and_tiny_datasets_are_not_taken_for_it():
    # Ordinary epochs: many batches an iterator.
    assert "new iteration" not in diagnose(_per_batch(iterators=15)).findings[0].summary
    # A dataset of one or two batches: every epoch is that short, and nothing is wrong with the loop.
    assert "new iteration" not in diagnose(_per_batch(dataset_len=64)).findings[0].summary
    # A DataLoader built anew for every batch (one per task, say) is not this loop's iterator.
    rebuilt = _per_batch()
    rebuilt.loaders[0].builds = 150
    assert "new iteration" not in diagnose(rebuilt).findings[0].summary
