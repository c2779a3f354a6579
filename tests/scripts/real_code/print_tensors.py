"""A loop that prints whole tensors every step (`print(step, loss, out[:8])`): torch formats each
value as text in Python (torch/_tensor_str.py), then the line is written out. Options: --steps."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
a = p.parse_args()
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 64), torch.randint(0, 10, (128,))
for step in range(a.steps):
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss, out[:8])
