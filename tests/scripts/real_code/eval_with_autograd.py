"""A classifier's loop as tutorials write it: train from a DataLoader, and after every epoch
evaluate() on a validation DataLoader, keeping every batch's outputs for the accuracy at the end,
without torch.no_grad(): each forward records a graph, and the kept outputs keep it alive.
Measured here (4 epochs, 32768 validation rows): an evaluation pass 0.90-0.97 s and 917 MB peak
RSS; under --no-grad 0.59-0.75 s and 398 MB. Options: --epochs, --val-rows, --no-grad."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--val-rows", type=int, default=32768)
p.add_argument("--no-grad", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
train = DataLoader(TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,))),
                   batch_size=64, shuffle=True)
vx, vy = torch.randn(a.val_rows, 256), torch.randint(0, 10, (a.val_rows,))
val = DataLoader(TensorDataset(vx, vy), batch_size=256)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                      nn.Linear(1024, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()


def evaluate() -> float:
    model.eval()
    outs = []
    for x, _ in val:
        outs.append(model(x))
    preds = torch.cat(outs).argmax(1)
    model.train()
    return (preds == vy).float().mean().item()


for epoch in range(a.epochs):
    for x, y in train:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if a.no_grad:
        with torch.no_grad():
            acc = evaluate()
    else:
        acc = evaluate()
    print(f"epoch {epoch} loss {loss.item():.3f} accuracy {acc:.3f}")
