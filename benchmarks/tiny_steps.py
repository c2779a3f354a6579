"""A loop of very short steps (batch 1 from a DataLoader over tensors in memory, a small MLP, Adam):
~0.5 ms a step on the 2-core development machine, so the probes' per-step work (each fetch,
backward and optimizer step, and the step boundary) is the largest share it can be, and so is
what that work costs in place beyond its own time (the loop's caches, a wrapper's frame). Runs
until --steps or --seconds, printing its throughput after warm-up like busy_loop.py.
"""

import argparse
import time

import step_times
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10**9)
    p.add_argument("--seconds", type=float, default=float("inf"))
    a = p.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(4096, 64), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=1, shuffle=True)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    warm, start = 200, time.perf_counter()
    t0, step = start, 0
    while step < a.steps and time.perf_counter() - start < a.seconds:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_times.mark()
            step += 1
            if step == warm:
                t0 = time.perf_counter()
            if step >= a.steps or time.perf_counter() - start >= a.seconds:
                break
    print(f"throughput: {(step - warm) / (time.perf_counter() - t0):.3f} steps/s")
    step_times.write()


if __name__ == "__main__":
    main()
