"""compute-bound said beside an input finding where the two add up: a DataLoader without workers
(the main process makes each batch between the steps' computations) and the compute still most of
the step. Seen on tests/scripts/real_code/l2_by_hand.py, on a host that ran its step in 6 ms: the
TensorDataset's per-sample fetch 17-18% of it made preprocessing-bound lead, and its L2 penalty
(16% of the step, Adam's weight_decay the fix) was said nowhere."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.rules import diagnose
from gpubottle.rules.thresholds import COMPUTE_BESIDE_INPUT


def _categories(wait_share: float, workers: int = 0) -> tuple[str, list[str]]:
    ev = evidence(steps=200, step_s=0.006, wait_s=0.006 * wait_share, main=1.0, cores=2.0,
                  num_workers=workers, per_worker=0.5 if workers else None)
    r = diagnose(ev)
    return r.primary, [f.category for f in r.findings]


def test_a_loop_loading_its_own_batches_is_told_of_both_the_input_leading() -> None:
    primary, cats = _categories(0.18)
    assert primary != v.COMPUTE_BOUND and v.COMPUTE_BOUND in cats, (primary, cats)
    assert cats.index(v.COMPUTE_BOUND) > cats.index(primary)  # (info: said after the verdict)


def test_not_beside_workers_nor_where_the_wait_is_most_of_the_step() -> None:
    # Workers make the batches beside the compute: a faster step only waits longer.
    assert v.COMPUTE_BOUND not in _categories(0.18, workers=2)[1]
    assert v.COMPUTE_BOUND not in _categories(1.0 - COMPUTE_BESIDE_INPUT + 0.1)[1]
