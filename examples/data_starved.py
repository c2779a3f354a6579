"""Data-starved: samples come from slow storage and are read one by one in the training process.

Expected verdict: data-starved. Each sample read waits ~3 ms on "network storage" (a sleep stands in
for the latency), and the DataLoader has num_workers=0, so the loop waits for every batch while the
CPU has capacity to spare. The fix gpubottle should compute: enough workers to overlap reading with
the step (reads wait rather than compute, so they need no core each).

    gpubottle run examples/data_starved.py --epochs 2
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class RemoteSamples(Dataset):
    """Samples on slow storage: each read has ~3 ms of latency before the bytes arrive."""

    def __init__(self, n: int, dim: int = 256, latency_s: float = 0.003) -> None:
        self.n, self.dim, self.latency_s = n, dim, latency_s
        g = torch.Generator().manual_seed(0)
        self.w = torch.randn(dim, generator=g)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        time.sleep(self.latency_s)  # waiting on the storage, not computing
        x = torch.randn(self.dim, generator=torch.Generator().manual_seed(i))
        return x, (x @ self.w > 0).long()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=0)
    a = p.parse_args()
    loader = DataLoader(RemoteSamples(a.samples), batch_size=a.batch_size, shuffle=True,
                        num_workers=a.num_workers)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    steps = 0
    for epoch in range(a.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
        print(f"epoch {epoch}: loss {loss.item():.3f}", flush=True)
    print(f"{steps / (time.perf_counter() - start):.2f} steps/s")


if __name__ == "__main__":
    main()
