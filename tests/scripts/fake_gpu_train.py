"""A small training loop that believes it runs on a GPU (tests/support/fake_cuda.py stands in for torch.cuda).

--oom STEP raises torch.cuda.OutOfMemoryError at that step, as the allocator would; --sync calls
torch.cuda.synchronize() every step (a sync that torch's sync debug mode never warns about);
--reset-peak resets the allocator's peak counters every step, as some scripts do per epoch.
"""
import argparse
import os
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import fake_cuda  # noqa: E402

fake_cuda.install()
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--oom", type=int, default=-1)
parser.add_argument("--sync", action="store_true")
parser.add_argument("--reset-peak", action="store_true")
args = parser.parse_args()

cache = torch.zeros(512, 1024)  # a large tensor the script keeps referenced
data = TensorDataset(torch.randn(4096, 32), torch.randint(0, 2, (4096,)))
loader = DataLoader(data, batch_size=64)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for i, (x, y) in enumerate(loader):
    if i == args.steps:
        break
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i % 2 == 0:
        print(f"step {i} loss {loss.item():.3f}")  # a per-step sync: .item()
    if args.sync:
        torch.cuda.synchronize()  # marker: synchronize
    if args.reset_peak:
        torch.cuda.reset_peak_memory_stats()
    if i == args.oom:
        raise torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 80.00 GiB "
            "of which 1.20 GiB is free.")
