"""An MLP trained in batches of 128 and evaluated after each epoch through a DataLoader of
batch_size=1: each pass calls the model once a sample, 2,048 calls, and the passes take longer
than the training. Options: --epochs, --eval-batch (the fix: 128)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--eval-batch", type=int, default=1)
a = p.parse_args()
torch.manual_seed(0)
train = TensorDataset(torch.randn(8192, 64), torch.randint(0, 10, (8192,)))
val = TensorDataset(torch.randn(2048, 64), torch.randint(0, 10, (2048,)))
train_loader = DataLoader(train, batch_size=128, shuffle=True)
val_loader = DataLoader(val, batch_size=a.eval_batch)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(a.epochs):
    model.train()
    for x, y in train_loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    print(epoch, correct / len(val))
