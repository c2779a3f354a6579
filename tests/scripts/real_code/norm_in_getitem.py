"""A dataset that standardises each sample with the statistics of the whole array, computed in
__getitem__ at every call: every sample, in every worker, pays for two passes over all the data.
Measured when written (20,000 x 24, batch 64, 2 workers, 2 cores): 88 ms of the workers' CPU a
batch, 59 ms a step; with the statistics made once in __init__, ~6 ms a step.
Options: --rows, --steps, --workers."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Standardised(Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        mean = self.x.mean(axis=0)
        std = self.x.std(axis=0)
        return torch.from_numpy((self.x[i] - mean) / std).float(), int(self.y[i])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, 24)).astype(np.float32)
    Y = rng.integers(0, 3, a.rows)
    loader = DataLoader(Standardised(X, Y), batch_size=64, shuffle=True, num_workers=a.workers)
    model = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = torch.optim.Adam(model.parameters())
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == a.steps:
            break
    print("done")
