"""A small CNN whose body is a stack of ten alike Conv2d(32, 32, 3) layers in an nn.ModuleList,
each on the last one's output (`for layer in self.layers: x = F.relu(layer(x))`). gpubottle once
read the ten as siblings called one by one from one line, their first input's channels their
own, and offered one grouped convolution: wrong (each takes the previous one's output, not a
slice of one input). Nothing of siblings should be said. Options: --steps."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self, depth=10, ch=32):
        super().__init__()
        self.stem = nn.Conv2d(3, ch, 3, padding=1)
        self.layers = nn.ModuleList([nn.Conv2d(ch, ch, 3, padding=1) for _ in range(depth)])
        self.head = nn.Linear(ch, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))
        for layer in self.layers:
            x = F.relu(layer(x))
        return self.head(x.mean((2, 3)))


ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=40)
a = ap.parse_args()
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for _step in range(a.steps):
    x = torch.randn(32, 3, 32, 32)
    y = torch.randint(0, 10, (32,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
