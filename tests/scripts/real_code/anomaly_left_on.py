"""A training loop with autograd's anomaly detection left on from a debugging session
(torch.autograd.set_detect_anomaly(True)): every operation keeps its Python traceback and every
backward checks each gradient for NaN. Options: --steps."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
a = p.parse_args()
torch.autograd.set_detect_anomaly(True)
model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU()) for _ in range(6)], nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
for _ in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
