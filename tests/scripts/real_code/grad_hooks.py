"""Gradient statistics logged by a hook on every parameter (Tensor.register_hook): a norm and
percentiles through numpy at every backward. Its time is inside the backward. Options: --steps."""

import argparse

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=800)
args = p.parse_args()

model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(256, 256), nn.ReLU())], nn.Linear(256, 10))
norms = []


def log_grad(g):
    a = g.detach().numpy()
    norms.append((float(np.linalg.norm(a)), np.percentile(np.abs(a), [50, 90, 99])))
    return g


for prm in model.parameters():
    prm.register_hook(log_grad)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(128, 256)
y = torch.randint(0, 10, (128,))
for _step in range(args.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done", len(norms))
