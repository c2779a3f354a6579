"""An MLP with batch norm and dropout whose evaluate() calls model.eval() and never model.train():
the script calls model.train() once, before its first epoch, so every epoch after the first trains
in eval mode (dropout off, batch norm frozen on its running statistics). Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=4)
a = p.parse_args()
torch.manual_seed(0)
x, y = torch.randn(2400, 32), torch.randint(0, 10, (2400,))
train = DataLoader(TensorDataset(x[:2000], y[:2000]), batch_size=40, shuffle=True)
val = DataLoader(TensorDataset(x[2000:], y[2000:]), batch_size=200)
model = nn.Sequential(nn.Linear(32, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def evaluate() -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in val:
            correct += int((model(xb).argmax(1) == yb).sum())
    return correct / 400


model.train()
for epoch in range(a.epochs):
    for xb, yb in train:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch, evaluate())
