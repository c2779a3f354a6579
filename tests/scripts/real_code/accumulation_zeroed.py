"""Gradient accumulation over 4 micro-batches with optimizer.zero_grad() at the top of every
micro-batch: each step trains on the last micro-batch's gradients alone and the other 3 backward
passes are thrown away. Options: --epochs, --fixed (zero once a step, after it)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--fixed", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
x, y = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ACCUM = 4
for epoch in range(a.epochs):
    for i, (xb, yb) in enumerate(loader):
        if not a.fixed:
            opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb) / ACCUM
        loss.backward()
        if (i + 1) % ACCUM == 0:
            opt.step()
            if a.fixed:
                opt.zero_grad()
    print(epoch)
