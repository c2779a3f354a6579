"""A deep ensemble of 16 small MLPs trained on the same batches, each member called in turn
(`torch.stack([m(x) for m in members])`): every op runs 16 times, small. gpubottle offered fused
Adam and `m = torch.compile(m)`. It should name the members' calls with one vmapped call over
their stacked parameters (torch.func.stack_module_state): 1500 steps 4.8-4.9 s -> 1.8-1.9 s
here. Options: --steps."""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=1500)
a = ap.parse_args()
torch.manual_seed(0)
members = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)) for _ in range(16))
opt = torch.optim.Adam(members.parameters(), lr=1e-3)
for _step in range(a.steps):
    x = torch.randn(128, 32)
    y = x[:, :1] * 2 + 0.1 * torch.randn(128, 1)
    preds = torch.stack([m(x) for m in members])
    loss = ((preds - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
