"""A class-weighted loss written per sample in Python (from a paper's per-example formula): one
log_softmax and a few small ops per row, and a backward through as many small graphs. It needs the
model's output, so the DataLoader's workers cannot take it: only batched tensor ops make it cheap.
Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
loader = DataLoader(TensorDataset(torch.randn(8192, 64), torch.randint(0, 10, (8192,))), batch_size=64,
                    shuffle=True)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
weights = torch.linspace(0.5, 1.5, 10)


def weighted_loss(logits, labels):
    total = 0.0
    for i in range(logits.shape[0]):
        logp = torch.log_softmax(logits[i], dim=0)
        total = total - weights[labels[i]] * logp[labels[i]]
    return total / logits.shape[0]


for _epoch in range(a.epochs):
    for xb, yb in loader:
        opt.zero_grad()
        loss = weighted_loss(model(xb), yb)
        loss.backward()
        opt.step()
