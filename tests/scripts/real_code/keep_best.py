"""A loop that keeps the model as it was before each step, to roll back a step that goes bad:
after every step, keep_for_rollback() deep-copies the whole model (copy.deepcopy over every
module and tensor). The copying, not the model, sets the pace. Options: --steps."""
import argparse
import copy

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=500)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU()) for _ in range(24)],
                      nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(4, 64), torch.randint(0, 4, (4,))
saved: dict = {"step": None, "model": None}


def keep_for_rollback(step: int) -> None:
    saved["step"], saved["model"] = step, copy.deepcopy(model)


for step in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    keep_for_rollback(step)
