"""A sampler balancing two classes by drawing an index of each with random.choice and removing it
with list.remove, the epoch's whole order built in __iter__ before its first batch. Measured when
written: 60,000 indices 3.9 s an epoch, shuffled once 23 ms. Options: --rows, --epochs."""

import argparse
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Sampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=40000)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()


class BalancedSampler(Sampler):
    """Alternates the classes, so each batch holds as many of each."""

    def __init__(self, labels):
        self.labels = labels.tolist()

    def __iter__(self):
        pos = [i for i in range(len(self.labels)) if self.labels[i] == 1]
        neg = [i for i in range(len(self.labels)) if self.labels[i] == 0]
        order = []
        while pos and neg:
            p = random.choice(pos)
            pos.remove(p)
            n = random.choice(neg)
            neg.remove(n)
            order += [p, n]
        return iter(order)

    def __len__(self):
        return len(self.labels)


X = torch.randn(args.rows, 32)
Y = (X[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(X, Y), batch_size=256, sampler=BalancedSampler(Y))
for _epoch in range(args.epochs):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("done")
