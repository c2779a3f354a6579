"""A loop that computes its accuracy with a second forward on the same batch (`model(xb)` again,
with autograd on) instead of from the first call's output: every step runs the forward twice.
Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
x, y = torch.randn(3000, 128), torch.randint(0, 10, (3000,))
loader = DataLoader(TensorDataset(x, y), batch_size=100, shuffle=True)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(a.epochs):
    correct = 0
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += int((model(xb).argmax(1) == yb).sum())
    print(epoch, correct / len(x))
