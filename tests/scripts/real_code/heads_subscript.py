"""A multi-task model with 32 Linear(256, 4) heads on one trunk's features, each called through
the list's index (`[self.heads[i](h) for i in range(len(self.heads))]`). gpubottle saw siblings
only where the line named each module by a name (`head(h)`), so these heads went unnamed. It
should name the line with one Linear(256, 128) whose output is viewed as one slice each (32
Linear(256, 8) heads at batch 64 ran 500 steps in 1.56-1.7 s, one Linear(256, 256) 0.39-0.4 s
here). Options: --steps."""
import argparse

import torch
from torch import nn


class MultiTask(nn.Module):
    def __init__(self, tasks=32):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(128, 256), nn.ReLU())
        self.heads = nn.ModuleList([nn.Linear(256, 4) for _ in range(tasks)])

    def forward(self, x):
        h = self.trunk(x)
        return [self.heads[i](h) for i in range(len(self.heads))]


ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=2000)
a = ap.parse_args()
torch.manual_seed(0)
model = MultiTask()
opt = torch.optim.Adam(model.parameters(), 1e-3)
for _step in range(a.steps):
    x = torch.randn(64, 128)
    ys = torch.randint(0, 4, (64, 32))
    outs = model(x)
    loss = sum(nn.functional.cross_entropy(o, ys[:, i]) for i, o in enumerate(outs))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
