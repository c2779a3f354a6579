"""probes/batch_leaves.py: what a real DataLoader's first batch is made of, once per loader."""

from __future__ import annotations

import torch
from recorders import ListRecorder
from torch.utils.data import DataLoader, TensorDataset

from gpubottle.probes.batch_leaves import MAX_LEAVES, BatchLeavesProbe, count_leaves
from gpubottle.wire import BatchLeaves


def test_the_leaves_of_real_batches() -> None:
    pairs = DataLoader(TensorDataset(torch.zeros(8, 3), torch.zeros(8)), batch_size=4)
    assert count_leaves(next(iter(pairs))) == (2, 0, 4 * 3 * 4 + 4 * 4)  # (x, y): two float32 tensors
    dicts = DataLoader([{"a": torch.zeros(2), "b": torch.zeros(3), "name": "s"}] * 4, batch_size=2)
    # two stacked float32 tensors, a list of two strings
    assert count_leaves(next(iter(dicts))) == (2, 2, 2 * 2 * 4 + 2 * 3 * 4)
    lists = DataLoader(list(range(8)), batch_size=4, collate_fn=lambda b: [[float(i)] * 5 for i in b])
    assert count_leaves(next(iter(lists))) == (0, 20, 0)  # Python numbers, pickled one by one
    assert count_leaves([0.0] * (MAX_LEAVES + 10))[1] == MAX_LEAVES  # bounded


def test_each_loader_is_counted_once() -> None:
    rec = ListRecorder()
    probe = BatchLeavesProbe(rec)  # type: ignore[arg-type]
    for lid in (1, 1, 2, 1):
        probe.see(lid, (torch.zeros(2), torch.zeros(2)))
    got = [r for r in rec.records if isinstance(r, BatchLeaves)]
    assert got == [BatchLeaves(1, 2, 0, 16), BatchLeaves(2, 2, 0, 16)]
