"""Eight DataLoader workers on a small machine, each sample a short wait (a read that takes 0.1 ms)
and a little tensor work: the workers mostly wait, overlapping their waits, so fewer of them would
wait in turn and the run would slow down. Options: --steps, --workers, --read-ms."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Reads(Dataset):
    def __init__(self, read_s: float) -> None:
        self.read_s = read_s

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):
        time.sleep(self.read_s)  # the read
        x = torch.full((3, 32, 32), float(i % 11)) / 11.0
        return x, i % 10


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=150)
p.add_argument("--workers", type=int, default=8)
p.add_argument("--read-ms", type=float, default=0.1)
a = p.parse_args()
loader = DataLoader(Reads(a.read_ms / 1e3), batch_size=64, num_workers=a.workers, shuffle=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(loader, 1):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == a.steps:
        break
