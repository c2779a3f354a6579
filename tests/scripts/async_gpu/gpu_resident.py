"""A dataset held on the GPU whose __getitem__ reads a label with int() (num_workers=0): the first
read of each batch waits for the previous step's GPU work, so the loop's wait for data absorbs the
GPU's backlog while the GPU is busy. Device truth: 30 ms of GPU work a step, idle a few percent
(the batch made after the drain): compute-bound, and the reads are a cost of their own, not a
loader that needs workers (moving the dataset to the GPU is what led here)."""

import argparse

import torch
from common import kernel, on_device, step_done
from torch import nn
from torch.utils.data import DataLoader, Dataset


class OnGpu(Dataset):
    def __init__(self, n: int) -> None:
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 2, (n,))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        label = on_device(self.y[i])  # an element of a tensor that lives on the GPU
        return self.x[i], int(label)


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=150)
a = p.parse_args()
loader = DataLoader(OnGpu(100_000), batch_size=32, shuffle=True)
model = nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(loader):
    if step == a.steps:
        break
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    kernel(0.030)
    opt.step()
    opt.zero_grad()
    step_done()
