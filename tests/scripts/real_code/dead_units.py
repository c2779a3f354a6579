"""An MLP trained with Adam at a high learning rate on a CPU: many ReLU units die early (their
gradients are zero from then on), and Adam's first moment of their weights decays by beta1 a step
until, ~750 steps later, it is subnormal (below 1.2e-38), where it stays. The CPU computes on those
values many times slower: measured when written, 3.2 ms a step before, 5-7 ms after; with
torch.set_flush_denormal(True) (--flush) the steps keep their first pace. Options: --steps,
--width, --flush."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1300)
p.add_argument("--width", type=int, default=512)
p.add_argument("--flush", action="store_true")
a = p.parse_args()
if a.flush:
    torch.set_flush_denormal(True)
torch.manual_seed(0)
x_all, y_all = torch.randn(4096, 128), torch.randint(0, 10, (4096,))
model = nn.Sequential(nn.Linear(128, a.width), nn.ReLU(), nn.Linear(a.width, a.width), nn.ReLU(),
                      nn.Linear(a.width, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(a.steps):
    idx = torch.randint(0, len(x_all), (64,))
    loss = nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 200 == 0:
        print(f"step {step} loss {loss.item():.3f}", flush=True)
