"""A loop indexing its tensors itself, each step's rows picked with np.random.choice(N, 256,
replace=False): numpy's legacy choice shuffles all N indices to keep 256. Measured when written:
N = 1,000,000, 12 ms a call, 0.012 ms as torch.randint. Options: --steps, --rows."""

import argparse

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=500)
p.add_argument("--rows", type=int, default=1_000_000)
args = p.parse_args()

N = args.rows
X = torch.randn(N, 16)
Y = (X[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for _step in range(args.steps):
    idx = np.random.choice(N, 256, replace=False)
    xb, yb = X[idx], Y[idx]
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
