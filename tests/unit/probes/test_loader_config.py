"""probes/loader_config.py: what a real DataLoader was built with, read from the object torch made."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from gpubottle.probes.loader_config import loader_config


def open_index(worker_id: int) -> None:  # a worker_init_fn of the user's
    pass


def test_the_workers_init_function_is_named_at_its_line_only_with_workers() -> None:
    ds = TensorDataset(torch.zeros(8, 2))
    cfg = loader_config(DataLoader(ds, batch_size=4, num_workers=2, worker_init_fn=open_index), 1)
    assert cfg["num_workers"] == 2 and cfg["batch_size"] == 4 and not cfg["persistent_workers"]
    name, site = cfg["worker_init"].split(" (")
    assert name == "open_index" and site.rstrip(")").endswith(
        f"test_loader_config.py:{open_index.__code__.co_firstlineno}"), cfg["worker_init"]
    assert "worker_init" not in loader_config(DataLoader(ds, worker_init_fn=open_index), 2)  # no workers
    assert "worker_init" not in loader_config(DataLoader(ds, num_workers=2), 3)


class Reviews(torch.utils.data.Dataset[torch.Tensor]):  # a dataset of the user's
    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor([i])


def test_a_dataset_inside_torchs_wrappers_is_named_by_its_own_class_and_getitem() -> None:
    """random_split's Subset (or a split split again, a ConcatDataset of one class) only maps the
    index: the sample's work is the user's __getitem__, which the fixes name (a text dataset in a
    Subset was said as torch's Subset, its tokenizing never named)."""
    from torch.utils.data import ConcatDataset, Subset, random_split

    line = Reviews.__getitem__.__code__.co_firstlineno
    train, _ = random_split(Reviews(), [0.8, 0.2])
    for ds in (train, Subset(train, [0, 1]), ConcatDataset([Reviews(), Reviews()])):
        cfg = loader_config(DataLoader(ds, batch_size=2), 1)
        assert cfg["dataset_class"].endswith("Reviews"), cfg["dataset_class"]
        assert cfg["dataset_getitem"].endswith(f"test_loader_config.py:{line}"), cfg["dataset_getitem"]
    mixed = loader_config(DataLoader(ConcatDataset([Reviews(), TensorDataset(torch.zeros(3))])), 2)
    assert mixed["dataset_class"].endswith("ConcatDataset") and mixed["dataset_getitem"] is None, mixed
