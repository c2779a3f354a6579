"""A regression on an in-memory dataset made with requires_grad=True (`X = torch.tensor(data,
requires_grad=True)`), its batches cut by index: `model(X[idx])`. Each step's backward makes X's
whole gradient (400,000 x 64) and adds it into X.grad, which no optimizer reads: backward 8.2 s of
8.4 s of steps, read as compute-bound with torch.compile. gpubottle should name the data's
requires_grad: the script 11.3 s -> 2.3 s here without it, the same loss. Options: --steps."""
import argparse

import numpy as np
import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
a = ap.parse_args()
rng = np.random.default_rng(0)
data = rng.standard_normal((400_000, 64)).astype(np.float32)
target = data[:, :4].sum(1, keepdims=True)
X = torch.tensor(data, requires_grad=True)
Y = torch.tensor(target)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for _step in range(a.steps):
    idx = torch.randint(0, len(X), (256,))
    loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
