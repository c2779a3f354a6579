"""An experiment tracker the loop calls every step: Tracker.log copies every weight to Python to
keep a histogram of it. The tracker, not the model, sets the pace; calling it every N steps is the
fix, and it goes at the loop's call, not inside the tracker. Options: --steps."""
import argparse

import torch
from torch import nn


class Tracker:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def log(self, step: int, loss: torch.Tensor, model: nn.Module) -> None:
        row = {"step": step, "loss": loss.item()}
        for name, prm in model.named_parameters():
            values = sorted(prm.detach().flatten().tolist())
            row[name] = [values[len(values) * q // 10] for q in range(10)]
        self.rows.append(row)


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=800)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(96, 192), nn.Tanh(), nn.Linear(192, 8))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tracker = Tracker()
x, y = torch.randn(32, 96), torch.randint(0, 8, (32,))
for step in range(1, a.steps + 1):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    tracker.log(step, loss, model)
