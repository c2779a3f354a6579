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
