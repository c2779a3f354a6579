"""A curriculum by difficulty: at each epoch's start the whole dataset (a list of Python lists) is
sorted again by a key computed in Python, the same order every epoch, and batched by hand. The
sort holds the loop 0.4 s an epoch while its steps take 1.2 ms. Measured when written (2 cores,
200,000 rows, 6 epochs of 100 steps): 7.3-8.4 s plain, 5.3 s with the order sorted once before the
loop. Options: --rows, --epochs, --once (sort once, before the loop)."""
import argparse
import random

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=200000)
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--once", action="store_true")
args = p.parse_args()

random.seed(0)
data = [[random.random() for _ in range(random.randint(8, 64))] for _ in range(args.rows)]
labels = [random.randrange(5) for _ in range(len(data))]
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 5))
opt = torch.optim.Adam(model.parameters(), 1e-3)


def difficulty(i):
    return sum(abs(v - 0.5) for v in data[i]) / len(data[i])


order = sorted(range(len(data)), key=difficulty) if args.once else None
for epoch in range(args.epochs):
    if not args.once:
        order = sorted(range(len(data)), key=difficulty)
    for b in range(0, 6400, 64):
        idx = order[b:b + 64]
        x = torch.zeros(64, 64)
        for r, i in enumerate(idx):
            x[r, :len(data[i])] = torch.tensor(data[i])
        y = torch.tensor([labels[i] for i in idx])
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch, round(loss.item(), 4))
