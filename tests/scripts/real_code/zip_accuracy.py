"""A training accuracy counted by zipping each batch's predictions and labels and comparing them
element by element (each element a 0-d tensor), summed over the epoch. Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=8)
a = p.parse_args()
torch.manual_seed(0)
X, Y = torch.randn(20000, 64), torch.randint(0, 10, (20000,))
loader = DataLoader(TensorDataset(X, Y), batch_size=None,
                    sampler=torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(X), 256, False))
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(a.epochs):
    correct = total = 0
    for x, y in loader:
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        pred = out.argmax(1)
        correct += sum(1 for p, t in zip(pred, y) if p == t)
        total += len(y)
    print(epoch, correct / total)
