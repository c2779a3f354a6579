"""A tiny model fed from a TensorDataset one row at a time: the DataLoader indexes the tensors per
sample and collates 512 rows a batch, which costs more than the model's step. The dataset is
torch's own, so no line of this file is its __getitem__. Options: --steps."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=120)
a = p.parse_args()
torch.manual_seed(0)
rows = TensorDataset(torch.randn(60_000, 24), torch.randint(0, 5, (60_000,)))
loader = DataLoader(rows, batch_size=512, shuffle=True)
model = nn.Linear(24, 5)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
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
