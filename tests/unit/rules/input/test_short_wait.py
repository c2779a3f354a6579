"""The input wait's floor in short steps (rules/thresholds.input_wait_counts): a toy loop's small
wait is no finding, a short step that mostly waits is. Shaped like a measured run: a tabular
Dataset of the user's (__getitem__ returning self.x[i], self.y[i]) in batches of 256 on 2 cores,
0.74 ms of wait in a 1.5-ms step (49%), which read compute-bound; indexed whole its loop ran 2x faster."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.rules import diagnose
from gpubottle.rules import thresholds as th


def test_the_floor_gives_way_only_where_the_wait_is_most_of_the_step() -> None:
    assert not th.input_wait_counts(0.13, 0.0002)  # the toy loop the floor is for
    assert not th.input_wait_counts(0.30, 0.0006)  # a third of a short step: not yet
    assert th.input_wait_counts(0.49, 0.00074)
    assert not th.input_wait_counts(0.60, 0.0002)  # under a quarter of a millisecond
    assert th.input_wait_counts(0.06, 0.002)


def test_a_short_step_waiting_half_its_time_is_an_input_verdict() -> None:
    ev = evidence(step_s=0.0015, wait_s=0.00074, wait_cpu_s=0.00056, main=1.0, tree=1.0, cores=2)
    lo = ev.loaders[0]
    lo.batch_size, lo.dataset_class, lo.batch_indexable, lo.sampler = 256, "Tabular", True, "RandomSampler"
    f = diagnose(ev).findings[0]
    assert f.category == v.PREPROCESSING_BOUND, f
    assert f.fixes[0].change == {"batch_index": [False, True]}
    assert "its __getitem__ at data.py:10 only indexes its tensors" in f.fixes[0].text, f.fixes[0].text
    # Where making a batch costs more than the step's compute (torch.tensor(self.x[i]) per sample:
    # 2.6 ms of a 3.6-ms step), the batches indexed whole are the cheaper per-sample work, not
    # "cache decoded samples, decode at lower resolution".
    dear = evidence(step_s=0.0036, wait_s=0.0026, wait_cpu_s=0.0026, main=1.0, tree=1.0, cores=2)
    lo = dear.loaders[0]
    lo.batch_size, lo.dataset_class, lo.batch_indexable, lo.sampler = 256, "Tabular", True, "RandomSampler"
    fixes = diagnose(dear).findings[0].fixes
    assert fixes[0].change == {"batch_index": [False, True]}
    assert not any(x.text.startswith("make per-sample work cheaper") for x in fixes), fixes
    toy = evidence(step_s=0.0016, wait_s=0.0002, wait_cpu_s=0.0002, main=1.0, tree=1.0, cores=2)
    assert diagnose(toy).primary != v.PREPROCESSING_BOUND and diagnose(toy).primary != v.DATA_STARVED
