"""A residual MLP made TorchScript with torch.jit.script, as older training code does, trained on
tensors already in memory (compute-bound on a CPU)."""

import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.l1, self.l2, self.norm = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.LayerNorm(d)

    def forward(self, x):
        return x + self.l2(torch.relu(self.l1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, d: int = 128, depth: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])
        self.out = nn.Linear(d, 10)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.out(x)


model = torch.jit.script(Net())
opt = torch.optim.Adam(model.parameters(), 1e-3)
X, Y = torch.randn(8192, 128), torch.randint(0, 10, (8192,))
for _ in range(args.steps):
    idx = torch.randint(0, len(X), (64,))
    loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
