"""A loop that keeps the best model so far: after every step whose loss improved, remember_best()
deep-copies the whole state_dict (copy.deepcopy over every tensor). The copying, not the model,
sets the pace. Options: --steps."""
import argparse
import copy

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU()) for _ in range(24)],
                      nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
best: dict = {"loss": float("inf"), "state": None, "step": None}


def remember_best(loss: float, step: int) -> None:
    if loss <= best["loss"] * 1.05:  # near the best: keep it
        best["loss"] = min(loss, best["loss"])
        best["state"], best["step"] = copy.deepcopy(model.state_dict()), step


for step in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    remember_best(loss.item(), step)
