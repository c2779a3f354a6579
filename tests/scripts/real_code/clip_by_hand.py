"""A small CNN whose gradients are clipped by hand, tensor by tensor, and whose weights are
averaged by hand into a copy (an EMA): two Python loops over the model's tensors at the script's
top level, a few small ops on each. Options: --steps."""
import argparse
import copy

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1500)
a = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), *[nn.Linear(16, 16) for _ in range(30)], nn.Linear(16, 10))
ema = copy.deepcopy(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(16, 3, 16, 16)
y = torch.randint(0, 10, (16,))
for _step in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    for p in model.parameters():
        if p.grad is not None:
            norm = p.grad.norm()
            if norm > 1.0:
                p.grad.mul_(1.0 / norm)
    opt.step()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.999).add_(pm, alpha=0.001)
