"""A small endless (or bounded) training loop; prints each step. Options: --steps N, --crash-at N,
--sigkill-at N, --manual (no torch.optim: backward and a hand-written update)."""
import argparse
import os
import signal
import sys
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10**9)
p.add_argument("--crash-at", type=int, default=-1)
p.add_argument("--sigkill-at", type=int, default=-1)
p.add_argument("--manual", action="store_true")
p.add_argument("--sleep", type=float, default=0.01)
a = p.parse_args()
model = nn.Linear(64, 4)
opt = None if a.manual else torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(a.steps):
    x = torch.randn(32, 64)
    loss = model(x).pow(2).mean()
    loss.backward()
    if opt is None:
        with torch.no_grad():
            for prm in model.parameters():
                prm -= 0.1 * prm.grad
                prm.grad = None
    else:
        opt.step()
        opt.zero_grad()
    print(f"step {step}", flush=True)
    if step == a.crash_at:
        raise RuntimeError(f"boom at step {step}")
    if step == a.sigkill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(a.sleep)
print("done", flush=True)
sys.exit(0)
