"""A class-balancing sampler written by hand: each index drawn with np.random.choice over all the
dataset's weights, which passes over the whole weight vector for every sample. The DataLoader asks
its sampler in the main process, so no worker count helps. Measured when written (200,000 rows,
batch 128): 185 ms a step; the epoch's indices drawn in one call, ~2 ms.
Options: --rows, --steps, --workers."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Sampler, TensorDataset


class Balanced(Sampler):
    def __init__(self, labels):
        counts = np.bincount(labels)
        w = 1.0 / counts[labels]
        self.p = w / w.sum()
        self.n = len(labels)

    def __len__(self):
        return self.n

    def __iter__(self):
        for _ in range(self.n):
            yield int(np.random.choice(self.n, p=self.p))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--workers", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    labels = np.random.default_rng(0).integers(0, 10, a.rows) ** 2 % 7
    data = TensorDataset(torch.randn(a.rows, 32), torch.as_tensor(labels))
    loader = DataLoader(data, batch_size=128, sampler=Balanced(labels), num_workers=a.workers)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 7))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == a.steps:
            break
    print("done")
