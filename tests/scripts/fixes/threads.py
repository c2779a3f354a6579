"""A CPU training loop that asks torch for more math threads than the machine has cores (a setting
copied from a bigger machine). Option --threads N (default 8)."""
import argparse
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=8)
p.add_argument("--steps", type=int, default=160)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(256, 512), torch.randint(0, 10, (256,))
start = time.perf_counter()
for step in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"elapsed: {time.perf_counter() - start:.2f} s")
