"""probes/getitem_source.py: a Dataset's __getitem__ read from its source, on real classes: the
forms that only index its arrays (so a list of indices is the batch), and per-sample work that
would not be."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gpubottle.probes.getitem_source import indexed_attrs, rows


class Base:
    def __init__(self) -> None:
        self.x, self.y = np.zeros((4, 2), dtype=np.float32), np.arange(4)


class Converted(Base):
    def __getitem__(self, idx: Any) -> Any:
        return torch.tensor(self.x[idx], dtype=torch.float32), torch.from_numpy(self.y[idx])


class Assigned(Base):
    def __getitem__(self, i: Any) -> Any:
        """A row and its label, as tensors."""
        features = torch.as_tensor(self.x[i]).float()
        label = self.y[i]
        return {"x": features, "y": label}


class Augmented(Base):
    def __getitem__(self, i: Any) -> Any:
        x = self.x[i]
        x = x + np.random.randn(*x.shape)  # per-sample noise
        return x, self.y[i]


class OtherIndex(Base):
    def __getitem__(self, i: Any) -> Any:
        return self.x[i], self.y[0]


class FromFile(Base):
    def __getitem__(self, i: Any) -> Any:
        return torch.load(self.x[i]), self.y[i]


def test_conversions_and_names_assigned_first_still_only_index() -> None:
    assert indexed_attrs(Converted.__getitem__) == ["x", "y"]
    assert indexed_attrs(Assigned.__getitem__) == ["x", "y"]
    ds = Converted()
    batch = Converted.__getitem__(ds, [0, 2])  # what a BatchSampler's list of indices gives
    assert batch[0].shape == (2, 2) and batch[1].tolist() == [0, 2]


def test_per_sample_work_another_index_or_a_call_is_not_indexing() -> None:
    for cls in (Augmented, OtherIndex, FromFile):
        assert indexed_attrs(cls.__getitem__) is None, cls
    assert indexed_attrs(len) is None  # no source


def test_rows_are_tensors_or_arrays_with_a_dimension() -> None:
    assert rows(torch.zeros(3)) and rows(np.zeros((3, 2)))
    assert not rows(torch.tensor(1.0)) and not rows([1, 2]) and not rows(np.float32(1))
