"""Samples are numpy arrays; the collate_fn builds each batch with torch.tensor(list of arrays),
which torch reads one value at a time (it warns so once). Options: --epochs, --workers."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self, n=20000):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 256)).astype(np.float32)
        self.y = rng.integers(0, 10, n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def collate(batch):
    xs = [b[0] for b in batch]
    ys = [b[1] for b in batch]
    return torch.tensor(xs), torch.tensor(ys)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    a = p.parse_args()
    loader = DataLoader(Features(), batch_size=128, shuffle=True, collate_fn=collate, num_workers=a.workers)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _epoch in range(a.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print("done")
