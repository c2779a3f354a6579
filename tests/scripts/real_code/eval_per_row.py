"""An MLP regression validated every 100 steps one sample at a time, with no DataLoader: a Python
loop over the held-out rows calling the model on each (`model(Xv[i:i + 1])`). Options: --steps."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=3000)
a = p.parse_args()
torch.manual_seed(0)
X = torch.randn(20000, 48)
Y = X[:, :3].sum(1, keepdim=True) + 0.1 * torch.randn(20000, 1)
Xv = torch.randn(3000, 48)
Yv = Xv[:, :3].sum(1, keepdim=True)
model = nn.Sequential(nn.Linear(48, 128), nn.Tanh(), nn.Linear(128, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def validate():
    model.eval()
    err = 0.0
    with torch.no_grad():
        for i in range(len(Xv)):
            pred = model(Xv[i:i + 1])
            err += float((pred - Yv[i:i + 1]).pow(2).sum())
    model.train()
    return err / len(Xv)


for step in range(a.steps):
    idx = torch.randint(0, len(X), (128,))
    loss = nn.functional.mse_loss(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(step, validate())
