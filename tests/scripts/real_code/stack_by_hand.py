"""Batches built by hand in the loop, a row at a time: `torch.stack([X[j] for j in idx])` indexes
the tensor once per row and stacks 256 small tensors, where `X[idx]` is one op. Options: --steps."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1500)
a = p.parse_args()
torch.manual_seed(0)
X = torch.randn(50_000, 32)
y = torch.randint(0, 2, (50_000,))
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
step = 0
while step < a.steps:
    perm = torch.randperm(len(X))
    for i in range(0, len(X) - 255, 256):
        idx = perm[i:i + 256]
        xb = torch.stack([X[j] for j in idx])
        yb = torch.stack([y[j] for j in idx])
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
