"""Validation written as a second loop over its own DataLoader, with neither torch.no_grad() nor
model.eval(), summing the loss tensors for the epoch's figure: autograd records every batch's graph
and the sum keeps them all (with their activations) until the pass ends. Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
train = DataLoader(TensorDataset(torch.randn(4096, 512), torch.randint(0, 10, (4096,))),
                   batch_size=128, shuffle=True)
val = DataLoader(TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,))), batch_size=256)
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Dropout(0.1), nn.Linear(2048, 2048), nn.ReLU(),
                      nn.Linear(2048, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
crit = nn.CrossEntropyLoss()
for epoch in range(a.epochs):
    for xb, yb in train:
        opt.zero_grad()
        crit(model(xb), yb).backward()
        opt.step()
    val_loss = 0
    for xb, yb in val:
        val_loss += crit(model(xb), yb)
    print(f"epoch {epoch}: validation loss {val_loss.item() / len(val):.3f}")
