"""Gradient accumulation over 4 micro-batches, each micro-batch's loss summed into a running total
with its autograd graph (`running = running + loss`, not `loss.item()`), the total appended to a
history every step. The kept graphs are small, but their blocks sit among the freed spans of each
step's activations, so glibc's heap grows mostly free (fragmentation) as well. Measured when written,
plain python, 500 steps on 2 cores: 556 MiB/min as written, 38 MiB/min with
MALLOC_MMAP_THRESHOLD_=131072 at 64 ms a step against 42, none with loss.item() at 42 ms.
Option: --seconds (40)."""

import argparse
import time

import torch
import torch.nn as nn

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=40.0)
    a = p.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                          nn.Linear(1024, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    accum = 4
    running = 0.0
    history = []
    end = time.monotonic() + a.seconds
    step = 0
    while time.monotonic() < end:
        for _ in range(accum):
            x = torch.randn(128, 512)
            y = torch.randint(0, 10, (128,))
            loss = nn.functional.cross_entropy(model(x), y) / accum
            loss.backward()
            running = running + loss
        opt.step()
        opt.zero_grad()
        history.append(running)
        step += 1
        if step % 200 == 0:
            print(f"step {step}: loss so far {float(running) / step:.3f}")
