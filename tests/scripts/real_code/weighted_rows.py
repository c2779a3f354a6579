"""Imbalanced classes: rows of a TensorDataset drawn by a WeightedRandomSampler (one weight per
row, the rare class 19x), batch_size=256: torch calls __getitem__ once a sample and stacks 256 rows
a batch (the sampler grouped by a BatchSampler passed as sampler=, batch_size=None, indexes the
dataset once a batch). Options: --steps."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1500)
a = p.parse_args()
torch.manual_seed(0)
N = 200_000
x = torch.randn(N, 32)
y = (torch.rand(N) < 0.05).long()
weights = torch.where(y == 1, 19.0, 1.0)
sampler = WeightedRandomSampler(weights, num_samples=N, replacement=True)
loader = DataLoader(TensorDataset(x, y), batch_size=256, sampler=sampler)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
step = 0
while step < a.steps:
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
