"""Records held in memory as Python objects (dicts of strings and lists), read at random by two
forked DataLoader workers while a heavier model trains on small batches: each read writes the
records' reference counts, so each worker copies the pages it reads, slowly, toward a copy of the
whole dataset each. Options: --records, --seconds, --batch, --array (the fix: one numpy array)."""
import argparse
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Records(Dataset):
    def __init__(self, n: int, as_array: bool) -> None:
        rng = np.random.default_rng(0)
        ids = rng.integers(0, 50_000, size=(n, 24))
        if as_array:
            self.ids, self.rows = ids, None
        else:
            self.rows = [{"text": f"record {i} " * 4, "ids": row.tolist(), "label": int(i % 5)}
                         for i, row in enumerate(ids)]

    def __len__(self) -> int:
        return len(self.rows) if self.rows is not None else len(self.ids)

    def __getitem__(self, i: int):
        if self.rows is None:
            return torch.as_tensor(self.ids[i]), int(i % 5)
        r = self.rows[i]
        return torch.tensor(r["ids"]), r["label"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=600_000)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--array", action="store_true")
    p.add_argument("--batch", type=int, default=4)
    a = p.parse_args()
    torch.set_num_threads(1)
    loader = DataLoader(Records(a.records, a.array), batch_size=a.batch, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.EmbeddingBag(50_000, 64), nn.Linear(64, 1024), nn.ReLU(),
                          nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for ids, y in loader:
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.perf_counter() - start >= a.seconds:
            break


if __name__ == "__main__":
    main()
