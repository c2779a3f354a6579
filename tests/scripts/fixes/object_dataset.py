"""The whole dataset loaded into RAM as Python objects (a list of per-sample lists of floats), read
at random by forked DataLoader workers: each read touches the objects' reference counts, so every
worker slowly copies the pages it reads and the run's memory grows epoch after epoch. Option
--array stores the same data as one numpy array instead (the fix). --seconds bounds the run."""
import argparse
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class InMemory(Dataset):
    def __init__(self, n: int, dim: int, as_array: bool) -> None:
        rng = np.random.default_rng(0)
        data = rng.standard_normal((n, dim), dtype=np.float32)
        self.rows = data if as_array else [row.tolist() for row in data]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        return torch.as_tensor(self.rows[i], dtype=torch.float32), i % 10


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=400_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--seconds", type=float, default=25.0)
    p.add_argument("--array", action="store_true")
    a = p.parse_args()
    ds = InMemory(a.samples, a.dim, a.array)
    loader = DataLoader(ds, batch_size=256, shuffle=True, num_workers=2, persistent_workers=True)
    model = nn.Sequential(nn.Linear(a.dim, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    steps = 0
    while time.perf_counter() - start < a.seconds:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if time.perf_counter() - start >= a.seconds:
                break
    print(f"steps: {steps}")


if __name__ == "__main__":
    main()
