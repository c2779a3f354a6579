"""Inputs standardised by the dataset's own statistics, recomputed at every step: the mean and the
standard deviation of all 200,000 rows take most of each step and never change (the whole tensor is
fixed). Options: --steps, --rows."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--rows", type=int, default=200_000)
a = p.parse_args()
torch.manual_seed(0)
X = torch.randn(a.rows, 64) * 3 + 1
y = torch.randint(0, 10, (a.rows,))
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _step in range(a.steps):
    idx = torch.randint(0, len(X), (256,))
    mean, std = X.mean(0), X.std(0)
    xb = (X[idx] - mean) / std
    loss = nn.functional.cross_entropy(model(xb), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
