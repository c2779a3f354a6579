"""A training loop that keeps every core busy at a steady rate, for overhead measurements.

Two torch threads (one per core of the 2-core development machine), layers small enough to stay in
cache and denormals flushed, so the step rate does not drift with the weights' values or with memory
traffic from other tenants: what changes it is only what else runs on the cores. Runs until killed
(or --steps, --seconds), printing its throughput after warm-up like examples/compute_bound.py.
"""

import argparse
import os
import time

import step_times
import torch
from torch import nn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10**9)
    p.add_argument("--seconds", type=float, default=float("inf"))
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(512, 256), torch.randint(0, 10, (512,))
    warm, start = 20, time.perf_counter()
    t0, step = start, 0
    while step < a.steps and time.perf_counter() - start < a.seconds:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step_times.mark()
        step += 1
        if step == warm:
            t0 = time.perf_counter()
    print(f"throughput: {(step - warm) / (time.perf_counter() - t0):.3f} steps/s")
    step_times.write()


if __name__ == "__main__":
    main()
