"""A GRU classifier over long token sequences on a CPU: its gradients shrink through 200 time
steps into subnormal floats, which an x86 CPU computes on slowly (the backward 0.92 s a step here,
0.11 s with them flushed)."""

import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--length", type=int, default=200)
args = p.parse_args()
torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(500, 128)
        self.gru = nn.GRU(128, 128, batch_first=True)
        self.head = nn.Linear(128, 3)

    def forward(self, x):
        out, h = self.gru(self.emb(x))
        return self.head(h[-1])


model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(args.steps):
    x = torch.randint(1, 500, (64, args.length))
    y = torch.randint(0, 3, (64,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
