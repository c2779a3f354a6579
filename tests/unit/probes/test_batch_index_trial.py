"""The whole-batch indexing a `--try-fixes` trial applies to a DataLoader (probes/trial.py) and the
flag the loader probe records for it (probes/loader_config.py), on real torch loaders."""

from __future__ import annotations

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    random_split,
)
from torch.utils.data.distributed import DistributedSampler

from gpubottle.probes.loader_config import loader_config
from gpubottle.probes.trial import loader_kwargs

TRIAL = {"batch_index": True}


class Rows(Dataset[int]):
    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> int:
        return i


def _ds() -> TensorDataset:
    return TensorDataset(torch.arange(10).float(), torch.arange(10))


def _built(*args: object, **kwargs: object) -> DataLoader:
    a, k = loader_kwargs(DataLoader.__init__, args, dict(kwargs), TRIAL)
    return DataLoader(*a, **k)


def test_shuffled_batches_come_whole_with_the_same_sizes_and_every_sample_once() -> None:
    dl = _built(_ds(), batch_size=4, shuffle=True)
    assert dl.batch_size is None and type(dl.sampler) is BatchSampler
    assert type(dl.sampler.sampler) is RandomSampler
    batches = [y.tolist() for _, y in dl]
    assert [len(b) for b in batches] == [4, 4, 2] and sorted(sum(batches, [])) == list(range(10))
    dropped = [y.tolist() for _, y in _built(_ds(), batch_size=4, shuffle=True, drop_last=True)]
    assert [len(b) for b in dropped] == [4, 4]


def test_in_order_by_default_and_a_subset_from_random_split_too() -> None:
    assert [y.tolist() for _, y in _built(_ds(), 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    train, _ = random_split(_ds(), [0.6, 0.4], generator=torch.Generator().manual_seed(0))
    dl = _built(train, batch_size=4)
    assert type(dl.sampler.sampler) is SequentialSampler
    got = [y.tolist() for _, y in dl]
    assert got == [[train.indices[i] for i in range(4)], [train.indices[i] for i in range(4, 6)]]
    assert loader_config(DataLoader(train, 4, shuffle=True), 1)["batch_indexable"] is True


def test_the_scripts_weighted_or_subset_sampler_still_draws_the_indices_of_whole_batches() -> None:
    """torch's WeightedRandomSampler (imbalanced classes) or SubsetRandomSampler passed as sampler=:
    the same sampler, grouped by a BatchSampler, hands the dataset each batch's indices at once."""
    ds = _ds()
    weighted = WeightedRandomSampler([0.0] * 5 + [1.0] * 5, num_samples=8, replacement=True)
    cfg = loader_config(DataLoader(ds, 4, sampler=weighted), 1)
    assert cfg["batch_indexable"] is True and cfg["sampler"] == "WeightedRandomSampler"
    dl = _built(ds, batch_size=4, sampler=weighted)
    assert dl.batch_size is None and type(dl.sampler) is BatchSampler and dl.sampler.sampler is weighted
    batches = [y.tolist() for _, y in dl]
    assert [len(b) for b in batches] == [4, 4] and all(i >= 5 for b in batches for i in b)
    subset = SubsetRandomSampler([1, 3, 5, 7, 9])
    got = [y.tolist() for _, y in _built(ds, batch_size=2, sampler=subset, drop_last=True)]
    assert [len(b) for b in got] == [2, 2] and set(sum(got, [])) <= {1, 3, 5, 7, 9}
    # A DistributedSampler's set_epoch is called through loader.sampler: left as written.
    dist = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=False)
    assert loader_config(DataLoader(ds, 4, sampler=dist), 1)["batch_indexable"] is False
    a, k = loader_kwargs(DataLoader.__init__, (ds,), {"batch_size": 4, "sampler": dist}, TRIAL)
    assert k["sampler"] is dist and k["batch_size"] == 4


class Buckets(BatchSampler):
    """A batch sampler of the script's own: its batches are its choice, left as written."""


def test_the_scripts_own_sampler_collate_or_dataset_is_left_as_written() -> None:
    ds = _ds()
    own = Buckets(SequentialSampler(ds), 3, False)
    cases = [dict(batch_sampler=own), dict(batch_size=4, collate_fn=lambda b: b),
             dict(batch_size=None), dict(batch_sampler=[[0, 1], [2, 3]])]
    for kwargs in cases:
        a, k = loader_kwargs(DataLoader.__init__, (ds,), dict(kwargs), TRIAL)
        assert k.get("sampler") is None, kwargs
    a, k = loader_kwargs(DataLoader.__init__, (Rows(),), {"batch_size": 4}, TRIAL)
    assert k.get("sampler") is None and k["batch_size"] == 4


def test_torchs_batch_sampler_passed_as_batch_sampler_is_passed_as_sampler() -> None:
    ds = _ds()
    given = BatchSampler(RandomSampler(ds), 4, drop_last=True)
    cfg = loader_config(DataLoader(ds, batch_sampler=given), 1)
    assert cfg["batch_indexable"] is True and cfg["batch_sampler"] == "BatchSampler"
    # What the script asked for, not torch's defaults beside a batch_sampler= (SequentialSampler,
    # batch_size None, drop_last False).
    assert (cfg["sampler"], cfg["batch_size"], cfg["drop_last"]) == ("RandomSampler", 4, True), cfg
    dl = _built(ds, batch_sampler=given)
    assert dl.batch_size is None and dl.sampler is given and dl.batch_sampler is None
    batches = [y.tolist() for _, y in dl]
    assert [len(b) for b in batches] == [4, 4] and len(set(sum(batches, []))) == 8
    assert "batch_sampler" not in loader_config(DataLoader(ds, 4), 1)


def test_the_flag_is_set_only_where_one_index_a_batch_would_do() -> None:
    ds = _ds()
    assert loader_config(DataLoader(ds, 4), 1)["batch_indexable"] is True
    assert loader_config(DataLoader(Rows(), 4), 1)["batch_indexable"] is False
    assert loader_config(DataLoader(ds, None), 1)["batch_indexable"] is False  # already whole
    own = Buckets(SequentialSampler(ds), 3, False)
    # A batch sampler of the script's: the trial and the patch leave it as written, so no flag.
    cfg = loader_config(DataLoader(ds, batch_sampler=own), 1)
    assert cfg["batch_indexable"] is False and cfg["sampler"] == cfg["batch_sampler"] == "Buckets"
    given = BatchSampler(SequentialSampler(Rows()), 3, False)
    assert loader_config(DataLoader(Rows(), batch_sampler=given), 1)["batch_indexable"] is False
    assert loader_config(DataLoader(ds, sampler=BatchSampler(RandomSampler(ds), 4, False),
                                    batch_size=None), 1)["batch_indexable"] is False


class Tabular(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self) -> None:
        self.x, self.y = torch.randn(10, 3), torch.arange(10)

    def __len__(self) -> int:
        return 10

    def __getitem__(self, idx):  # type: ignore[no-untyped-def]
        """One row and its label."""
        return self.x[idx], self.y[idx]


class Named(Tabular):
    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return {"features": self.x[i], "label": self.y[i]}


class Scaled(Tabular):
    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self.x[i] * 2, self.y[i]  # work per sample: a list of indices would still do, unseen


class Listed(Tabular):
    def __init__(self) -> None:
        super().__init__()
        self.x = [[float(j)] for j in range(10)]  # type: ignore[assignment]


class Logged(Tabular):
    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        print(i)
        return self.x[i], self.y[i]


def test_a_dataset_whose_getitem_only_indexes_its_tensors_takes_lists() -> None:
    for ds in (Tabular(), Named()):
        assert loader_config(DataLoader(ds, 4, shuffle=True), 1)["batch_indexable"] is True
        batches = list(_built(ds, batch_size=4))
        labels = batches[0]["label"] if isinstance(batches[0], dict) else batches[0][1]
        assert labels.tolist() == [0, 1, 2, 3] and len(batches) == 3
    for ds in (Scaled(), Listed(), Logged()):
        assert loader_config(DataLoader(ds, 4), 1)["batch_indexable"] is False, type(ds)
        a, k = loader_kwargs(DataLoader.__init__, (ds, 4), {}, TRIAL)
        assert k.get("sampler") is None


class Raising(Tabular):
    @property
    def labels(self) -> torch.Tensor:
        raise RuntimeError("not loaded yet")

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self.x[i], self.labels[i]


def test_a_dataset_attribute_that_raises_leaves_the_flag_unknown_and_the_config_whole() -> None:
    cfg = loader_config(DataLoader(Raising(), 4), 1)
    assert cfg["batch_indexable"] is None and cfg["batch_size"] == 4 and cfg["dataset_class"]
