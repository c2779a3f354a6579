"""Compute-bound: the data is already in memory; the model's arithmetic takes the time.

Expected verdict: compute-bound. Batches come from an in-memory TensorDataset (fetching one costs
microseconds) and the model is a stack of wide linear layers, so the main process spends its step
in forward, backward and the optimizer. Prints its own throughput (used by `make bench`).

    gpubottle run examples/compute_bound.py --steps 200
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=64)
    a = p.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(4096, a.width), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=a.batch_size, shuffle=True, drop_last=True)
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(a.width, a.width), nn.GELU())],
                          nn.Linear(a.width, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step, warm = 0, 10
    t0 = time.perf_counter()
    while step < a.steps:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step == warm:
                t0 = time.perf_counter()
            if step >= a.steps:
                break
    rate = (a.steps - warm) / (time.perf_counter() - t0)
    print(f"throughput: {rate:.3f} steps/s")


if __name__ == "__main__":
    main()
