"""A tabular classifier regularised with an L2 penalty added to the loss by hand, as tutorials
write it: every step runs a few small ops per parameter tensor forward and backward, where Adam's
weight_decay would add the same gradient inside its multi-tensor update. Measured plain on the test
machine: 7.0 ms a step with the penalty, 5.9 ms with weight_decay=2 * lam.

    python l2_by_hand.py [--epochs N] [--rows N]"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--rows", type=int, default=20000)
a = p.parse_args()
torch.manual_seed(0)
X, Y = torch.randn(a.rows, 64), torch.randint(0, 5, (a.rows,))
loader = DataLoader(TensorDataset(X, Y), batch_size=256, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU()]
        for _ in range(6):
            layers += [nn.Linear(128, 128), nn.BatchNorm1d(128), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(128, 5)

    def forward(self, x):
        return self.head(self.body(x))


model = Net()
lam = 1e-4
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
crit = nn.CrossEntropyLoss()
for epoch in range(a.epochs):
    total = 0.0
    for xb, yb in loader:
        out = model(xb)
        loss = crit(out, yb)
        l2 = sum(p.pow(2.0).sum() for p in model.parameters())
        loss = loss + lam * l2
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f}")
