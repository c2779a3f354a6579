"""Rows of a TensorDataset batched by a BatchSampler the script passes as batch_sampler=: torch
still calls __getitem__ once a sample and stacks 512 rows a batch, the same per-sample Python as
batch_size=512 (passed as sampler= with batch_size=None, the dataset is indexed once a batch).
Options: --steps."""
import argparse

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=600)
a = p.parse_args()
torch.manual_seed(0)
rows = TensorDataset(torch.randn(100_000, 32), torch.randint(0, 2, (100_000,)))
loader = DataLoader(rows, batch_sampler=BatchSampler(RandomSampler(rows), batch_size=512,
                                                     drop_last=True))
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
step = 0
while step < a.steps:
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
