"""Which loader the input rules speak of: the training loader the loop waits on most, then the one
it drew most batches from (zipped_loaders.py: a fast and a slow loader yield as many batches, and
the first, fast one won the tie and was given the worker fix)."""

from __future__ import annotations

import dataclasses

from factories import evidence

from gpubottle.analysis.loaders import loader_infos
from gpubottle.collect.events import ChildEvents
from gpubottle.rules.common import main_loader
from gpubottle.wire import Batch


def test_the_loader_waited_on_most_is_the_main_one_whatever_its_order() -> None:
    ev = evidence(steps=50)
    fast = ev.loaders[0]
    slow = dataclasses.replace(fast, id=2, site="train.py:43", num_workers=1, fetch_s=4.6)
    ev.loaders = [fast, slow]
    assert main_loader(ev) is slow
    slow.fetch_s, slow.batches = 0.0, 60  # saved runs from before fetch_s: the most batches
    assert main_loader(ev) is slow
    slow.batches = 10
    assert main_loader(ev) is fast


def test_a_loaders_fetch_time_is_the_loops_own_fetches_in_all() -> None:
    ev = ChildEvents()
    ev.batches = [Batch(1, 0.0, 0.001, None, 0), Batch(2, 0.001, 0.040, None, 0),
                  Batch(1, 0.05, 0.051, None, 0), Batch(2, 0.051, 0.09, None, 0)]
    infos, _ = loader_infos(ev)
    by = {lo.id: lo.fetch_s for lo in infos}
    assert by[1] == 0.002 and by[2] == 0.078
