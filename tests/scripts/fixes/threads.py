"""A CPU training loop that asks torch for more math threads than the machine has cores (a setting
copied from a bigger machine). Option --threads N (default 8)."""
import argparse
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=8)
p.add_argument("--steps", type=int, default=500)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
# Small layers: many short parallel regions per step, each a barrier that a descheduled thread holds up.
model = nn.Sequential(nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))
start = time.perf_counter()
for _ in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"elapsed: {time.perf_counter() - start:.2f} s")
