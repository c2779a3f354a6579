"""Each sample projected with numpy in the dataset (two 512x256 @ 256x256 matmuls), two DataLoader
workers: numpy's OpenBLAS starts a thread per core in each worker, where torch keeps one, and the
two workers' pools fight for the cores (measured when written on 2 cores: 24-26 s for 2 epochs,
10-10.5 s with OPENBLAS_NUM_THREADS=1). Options: --steps, --workers."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Projected(Dataset):
    def __init__(self, n: int = 2000):
        self.w = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = np.random.default_rng(i).standard_normal((512, 256)).astype(np.float32)
        h = np.tanh(x @ self.w) @ self.w.T
        return torch.from_numpy(h.mean(0)), i % 10


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    loader = DataLoader(Projected(), batch_size=32, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    while step < args.steps:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step == args.steps:
                break
