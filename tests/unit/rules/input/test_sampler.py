"""A user's sampler that is most of the loop's wait: the DataLoader asks it for each batch's
indices in the main process, so no worker count helps; the fix is the sampler's own work (frames
as py-spy names them in a run of tests/scripts/real_code/bucket_sampler.py)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.stack_users import sampler_share
from gpubottle.analysis.stacks import Frame
from gpubottle.evidence import StackEvidence, StackFrameShare
from gpubottle.rules import diagnose
from gpubottle.rules import thresholds as th

SITE = "/venv/lib/python3.11/site-packages/torch/utils/data"
SCRIPT = "/home/u/bucket_sampler.py"
MAIN = Frame("main", SCRIPT, 60)
NEXT = [Frame("_BaseDataLoaderIter.__next__", f"{SITE}/dataloader.py", 741),
        Frame("_MultiProcessingDataLoaderIter._next_data", f"{SITE}/dataloader.py", 1504),
        Frame("_MultiProcessingDataLoaderIter._try_put_index", f"{SITE}/dataloader.py", 1560),
        Frame("_BaseDataLoaderIter._next_index", f"{SITE}/dataloader.py", 692)]
ITER = Frame("BucketSampler.__iter__", SCRIPT, 36)
KEY = Frame("BucketSampler.__iter__.<locals>.<lambda>", SCRIPT, 36)
WAIT = [Frame("_MultiProcessingDataLoaderIter._get_data", f"{SITE}/dataloader.py", 1470),
        Frame("Connection.poll", "/usr/lib/python3.11/multiprocessing/connection.py", 257)]
# A torch BatchSampler over the user's sampler: its own frame between.
BATCH = Frame("BatchSampler.__iter__", f"{SITE}/sampler.py", 335)


def test_the_samplers_share_is_of_the_loaders_samples_and_named_by_its_outermost_function():
    stacks = [[MAIN, *NEXT, ITER]] * 6 + [[MAIN, *NEXT, ITER, KEY]] * 2 + [[MAIN, *WAIT]] * 2
    got = sampler_share(stacks)
    assert got is not None and got.function == "BucketSampler.__iter__" and got.share == 0.8
    # A plain sampler under torch's BatchSampler is the user's all the same.
    got = sampler_share([[MAIN, *NEXT, BATCH, ITER]] * 3 + [[MAIN, *WAIT]])
    assert got is not None and got.function == "BucketSampler.__iter__" and got.share == 0.75
    # torch's own samplers (nothing of the user's beneath _next_index) are not named.
    assert sampler_share([[MAIN, *NEXT, BATCH]] * 4) is None
    assert sampler_share([[MAIN, *WAIT]] * 4) is None


def _ev(share: float, workers: int = 2):
    ev = evidence(steps=140, step_s=0.1, wait_s=0.08, wait_cpu_s=0.08, num_workers=workers, cores=2,
                  tree=1.2, main=1.0, per_worker=0.01)
    ev.stacks = StackEvidence(samples_main=118, samples_workers=200, worker_idle_fraction=1.0,
                              main_phases={"data": 0.9, "backward": 0.1},
                              main_sampler=StackFrameShare("BucketSampler.__iter__", "sampler.py:31", share))
    return ev


def test_a_sampler_that_is_most_of_the_wait_is_the_cause_and_the_only_fix():
    for workers in (2, 0):
        f = diagnose(_ev(0.98, workers)).findings[0]
        assert f.category == v.PREPROCESSING_BOUND
        assert "its sampler BucketSampler.__iter__ (sampler.py:31)" in f.summary
        assert "~78.4 ms a batch" in f.summary  # 98% of the 80-ms wait
        assert [x.where for x in f.fixes] == ["sampler.py:31"]
        assert not any(x.change.get("num_workers") for x in f.fixes)
        assert not any("taking batches from the workers" in e.text for e in f.evidence)


def test_a_sampler_below_half_the_wait_leaves_the_rest_of_the_rule_as_it_was():
    f = diagnose(_ev(th.SAMPLER_WAIT_SHARE - 0.1)).findings[0]
    assert "sampler" not in f.summary
    assert any("taking" in x.text or x.change.get("num_workers") for x in f.fixes)


DRAWS = """import random
import numpy as np
import torch


class Weighted:
    def __iter__(self):
        for _ in range(self.n):
            yield int(np.random.choice(self.n, p=self.p))
        for _ in range(self.n):
            yield random.choices(self.ids, weights=self.w)[0]
        while True:
            yield int(torch.multinomial(self.weights, 1))
        for _ in range(self.n):
            yield self.rng.choice(self.n, 1, True, self.p)
        yield from np.random.choice(self.n, size=self.n, p=self.p)
        for _ in range(self.n):
            yield int(np.random.choice(self.n))
        for i in np.random.choice(self.n, size=self.n, p=self.p):
            yield int(i)
        for _ in range(3):
            batch = torch.multinomial(self.weights, 128, replacement=True)
            yield from random.choices(self.ids, weights=self.w, k=128)
"""


def test_a_weighted_draw_of_one_index_in_a_loop_is_told_from_one_of_many(tmp_path):
    """np.random.choice(n, p=p), random.choices(ids, weights=w), torch.multinomial(w, 1), a
    Generator's choice with its size 1 positional: one index a call. A draw of many (size=n, k=128,
    num_samples 128), one outside a loop, or an unweighted choice (no pass over weights) is not."""
    import linecache

    from gpubottle.analysis.source_kinds import draw_kind
    from gpubottle.analysis.work_kinds import PER_INDEX_DRAW

    path = tmp_path / "weighted.py"
    path.write_text(DRAWS)
    linecache.checkcache(str(path))
    lines = DRAWS.splitlines()
    kinds = {n: draw_kind(str(path), n) for n, s in enumerate(lines, 1)
             if "choice" in s or "multinomial" in s}
    one = [n for n, k in kinds.items() if k == PER_INDEX_DRAW]
    assert [lines[n - 1].strip() for n in one] == [
        "yield int(np.random.choice(self.n, p=self.p))",
        "yield random.choices(self.ids, weights=self.w)[0]",
        "yield int(torch.multinomial(self.weights, 1))",
        "yield self.rng.choice(self.n, 1, True, self.p)"]


def test_the_sampler_drawing_each_index_is_named_at_the_draw_with_its_remedy(tmp_path):
    """Stacks as py-spy takes them in weighted_draws.py (the draw in numpy's C: no frame beneath
    the user's line): the sampler's kind is the per-index draw, its location the draw's line, and
    the fix says to draw the epoch's indices in one call."""
    import linecache

    from gpubottle.analysis.work_kinds import PER_INDEX_DRAW

    path = tmp_path / "weighted.py"
    path.write_text(DRAWS)
    linecache.checkcache(str(path))
    main = Frame("<module>", str(path), 40)
    draw = Frame("Weighted.__iter__", str(path), 9)
    got = sampler_share([[main, *NEXT, BATCH, draw]] * 9 + [[main, *WAIT]])
    assert got is not None and got.kind == PER_INDEX_DRAW and got.location.endswith("weighted.py:9"), got
    ev = _ev(0.98, 0)
    assert ev.stacks is not None
    ev.stacks.main_sampler = got
    [fix] = diagnose(ev).findings[0].fixes
    assert fix.where == got.location and "np.random.choice(n, size=n, p=p)" in fix.text, fix
    assert "sort or bucket" not in fix.text


def test_a_sampler_that_builds_each_epochs_order_at_its_start_is_said_so() -> None:
    """first_batch_waits_s of ~3.9 s against 0.8 ms a batch after: the wait is at each epoch's
    start, and the sampler already works once an epoch: not told to do so, nor said per batch."""
    from gpubottle.evidence import LoaderInfo
    from gpubottle.rules.input.decide import sampler_at_epoch_start
    from gpubottle.rules.input.words import sampler_fix

    lo = LoaderInfo(id=1, site="train.py:40", first_batch_waits_s=[3.7, 3.9, 4.0],
                    epoch_batches=[235, 235, 235], epoch_wait_s=[0.0008, 0.0008, 0.0008])
    at = sampler_at_epoch_start(lo)
    assert at is not None and abs(at - 3.8667) < 1e-3
    spread = LoaderInfo(id=1, site="train.py:40", first_batch_waits_s=[0.02, 0.02],
                        epoch_batches=[200, 200], epoch_wait_s=[0.01, 0.01])
    assert sampler_at_epoch_start(spread) is None
    text = sampler_fix("Balanced.__iter__", 0, None, at)
    assert "at each epoch's start" in text and "already does its work once an epoch" in text
    assert "do its work once per epoch" not in text
