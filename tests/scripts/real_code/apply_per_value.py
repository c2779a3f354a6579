"""A dataset clipping and scaling each sample with Tensor.apply_, a Python function called once for
every value (256 a sample). Measured when written: 4.6-4.9 ms a batch of 64 in apply_, 0.5-0.8 ms
as s.clamp(-1, 1) * 0.5. Options: --epochs."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1)
args = p.parse_args()


def clip_and_scale(v):
    return max(-1.0, min(1.0, v)) * 0.5


class Signals(Dataset):
    def __init__(self):
        self.x = torch.randn(4000, 256)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        s = self.x[i].clone()
        s.apply_(clip_and_scale)
        return s, i % 3


loader = DataLoader(Signals(), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 3))
opt = torch.optim.Adam(model.parameters())
for _epoch in range(args.epochs):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("done")
