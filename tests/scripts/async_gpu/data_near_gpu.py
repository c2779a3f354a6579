"""Data time near GPU time, no per-step sync: each batch takes 10 ms of CPU in __getitem__
(num_workers=0 by default), each step 2 ms of host time to launch 9 ms of GPU work. The host sets
the pace (12 ms a step) and the GPU sits idle 3 ms of it: data-starved, but the wait the host sees
(10 ms, 83%) overstates what workers can win back (12 -> 9 ms, the GPU's own time)."""

import argparse

import torch
from common import host_work, kernel, step_done
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, cpu_s: float) -> None:
        self.cpu_s = cpu_s

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):
        host_work(self.cpu_s)  # decoding and augmenting one sample
        return torch.full((16,), float(i % 5)), i % 2


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=150)
p.add_argument("--num-workers", type=int, default=0)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--sample-ms", type=float, default=1.25)
a = p.parse_args()
loader = DataLoader(Samples(a.sample_ms / 1000), batch_size=a.batch, num_workers=a.num_workers)
model = nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(loader):
    if step == a.steps:
        break
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    host_work(0.002)  # launching the step's kernels
    kernel(0.009)
    opt.step()
    opt.zero_grad()
    step_done()
