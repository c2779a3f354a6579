"""The learning rate decayed by building a new SGD with momentum at the top of every epoch: its
momentum buffers start over each epoch. Options: --epochs, --folds N (instead: N folds, each a new
model and optimizer, one epoch each: legitimately a new optimizer each time)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--folds", type=int, default=0)
a = p.parse_args()
torch.manual_seed(0)
x, y = torch.randn(1024, 32), torch.randint(0, 10, (1024,))
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


model = make_model()
for epoch in range(a.folds or a.epochs):
    if a.folds:
        model = make_model()  # a new model each fold
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * 0.5 ** epoch, momentum=0.9)
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch)
