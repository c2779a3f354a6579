"""The census of Python objects a dataset holds (what forked workers would copy as they read it)."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset, Subset, TensorDataset

from gpubottle.probes.dataset_census import held_objects

ROWS = [[float(i)] * 4 for i in range(20_000)]  # a module-level list the dataset reads


class Rows(Dataset[torch.Tensor]):
    def __init__(self, rows: object) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return 100

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(4)


class Made(Dataset[torch.Tensor]):
    """Makes its samples: holds nothing a read could copy."""

    def __init__(self) -> None:
        self.sleep_s = 0.004
        self.name = "x" * 1000

    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.randn(1024)


class Store:
    def __init__(self) -> None:
        self.paths = [f"/data/{i}.jpg" for i in range(30_000)]
        self.labels = {i: i % 10 for i in range(30_000)}


class Nested(Dataset[torch.Tensor]):
    def __init__(self) -> None:
        self.store = Store()

    def __len__(self) -> int:
        return 30_000

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(1)


class FromGlobal(Dataset[list[float]]):
    def __len__(self) -> int:
        return len(ROWS)

    def __getitem__(self, i: int) -> list[float]:
        return ROWS[i]


def test_python_objects_are_counted_and_arrays_are_not():
    assert held_objects(Made()) == 0
    assert held_objects(Rows(np.zeros((50_000, 8), dtype=np.float32))) == 0
    assert held_objects(Rows(torch.zeros(50_000, 8))) == 0
    assert held_objects(TensorDataset(torch.zeros(50_000, 8), torch.zeros(50_000))) == 2
    assert held_objects(Rows([[1.0, 2.0]] * 50_000)) == 50_000
    assert held_objects(Rows(np.array(["a"] * 30_000, dtype=object))) == 30_000
    assert held_objects(Rows(([1] * 500, [2] * 700))) == 2 + 500 + 700  # a tuple of columns
    assert held_objects(Nested()) == 60_000  # one level down, in a plain object
    assert held_objects(FromGlobal()) == len(ROWS)  # the list its __getitem__ names
    assert held_objects(list(range(12_345))) == 12_345  # a list passed as the dataset


def test_a_subset_counts_its_indices_and_its_dataset():
    ds = Subset(Rows([[1.0]] * 20_000), list(range(15_000)))
    assert held_objects(ds) == 35_000


def test_a_dataset_it_cannot_read_is_none_not_zero():
    class Hostile(Dataset[int]):
        def __len__(self) -> int:
            return 1

        def __getitem__(self, i: int) -> int:
            return i

        def __getattribute__(self, name: str) -> object:
            if name == "__dict__":
                raise RuntimeError("no")
            return super().__getattribute__(name)

    assert held_objects(Hostile()) is None


rows = [[0.0]] * 40_000  # a module global that shares its name with the dataset's attribute


class Attribute(Dataset[torch.Tensor]):
    def __init__(self) -> None:
        self.rows = torch.zeros(10, 4)

    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.rows[i]  # `rows` here is an attribute: the global list is not read


def test_an_attribute_is_not_the_global_of_the_same_name():
    assert held_objects(Attribute()) == 0
