"""Predictions gathered for an epoch-level metric with torch.cat at every step: each step copies
all the predictions before it, so a step's cost grows with the epoch and an epoch costs the square
of its length. Options: --rows (the epoch's samples), --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=48000)
p.add_argument("--epochs", type=int, default=1)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(a.rows, 64), torch.randint(0, 100, (a.rows,)))
loader = DataLoader(data, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 100))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(a.epochs):
    all_logits = torch.empty(0, 100)
    all_labels = torch.empty(0, dtype=torch.long)
    for xb, yb in loader:
        out = model(xb)
        loss = nn.functional.cross_entropy(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        all_logits = torch.cat([all_logits, out.detach()])
        all_labels = torch.cat([all_labels, yb])
    acc = (all_logits.argmax(1) == all_labels).float().mean().item()
    print(f"epoch {epoch}: accuracy {acc:.3f}")
