"""An MLP trained under CPU autocast to float16, as a GPU script's `torch.autocast(device,
dtype=torch.float16)` reads once its device is the CPU. Options: --steps."""

import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
args = p.parse_args()

model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
X, Y = torch.randn(4096, 512), torch.randint(0, 10, (4096,))
for _ in range(args.steps):
    idx = torch.randint(0, len(X), (64,))
    with torch.autocast("cpu", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
