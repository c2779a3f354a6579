"""Trains on batches held in memory and, every --eval-every steps, evaluates on a validation set
kept as one small file per sample (torch.load each, after a wait standing for a network
filesystem's latency), through a DataLoader with num_workers=0 written at its call. Options:
--steps, --eval-every, --samples, --latency-ms."""
import argparse
import os
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SampleFiles(Dataset):
    def __init__(self, folder: str, latency_s: float) -> None:
        self.paths = sorted(os.path.join(folder, f) for f in os.listdir(folder))
        self.latency_s = latency_s

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        time.sleep(self.latency_s)  # the filesystem's round trip, before the bytes arrive
        x, y = torch.load(self.paths[i])
        return x, y


def write_samples(folder: str, n: int) -> None:
    g = torch.Generator().manual_seed(1)
    for i in range(n):
        torch.save((torch.randn(48, generator=g), i % 3), os.path.join(folder, f"{i:05d}.pt"))


def accuracy(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    right = seen = 0
    with torch.no_grad():
        for x, y in loader:
            right += int((model(x).argmax(1) == y).sum())
            seen += len(y)
    model.train()
    return right / max(1, seen)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--eval-every", type=int, default=30)
    p.add_argument("--samples", type=int, default=160)
    p.add_argument("--latency-ms", type=float, default=4.0)
    a = p.parse_args()
    folder = tempfile.mkdtemp(prefix="val-files-")
    write_samples(folder, a.samples)
    model = nn.Sequential(nn.Linear(48, 128), nn.Tanh(), nn.Linear(128, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = DataLoader(SampleFiles(folder, a.latency_ms / 1e3), batch_size=16, num_workers=0)
    xs, ys = torch.randn(64, 16, 48), torch.randint(0, 3, (64, 16))
    for step in range(1, a.steps + 1):
        loss = nn.functional.cross_entropy(model(xs[step % 64]), ys[step % 64])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % a.eval_every == 0:
            print(f"step {step}: val accuracy {accuracy(model, val):.2f}", flush=True)


if __name__ == "__main__":
    main()
