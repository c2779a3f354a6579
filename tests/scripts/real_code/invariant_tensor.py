"""A beginner's loop over a numpy dataset that converts the whole array at every step to take one
batch of it (`xb = torch.FloatTensor(X_train)[i:i + bs]`): 200,000 x 100 float64 values made a
float32 tensor again each step for 256 rows. gpubottle named the line (63% of the step) with a
generic "make the ops on that line cheaper". It should say what the time goes to, the whole
array's conversion each step, with the conversion made once before the loop. Options: --steps."""
import argparse

import numpy as np
import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
a = ap.parse_args()
rng = np.random.default_rng(0)
X_train = rng.standard_normal((200000, 100))
y_train = rng.integers(0, 2, 200000)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(100, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
bs = 256
for i in range(0, a.steps * bs, bs):
    xb = torch.FloatTensor(X_train)[i:i + bs]
    yb = torch.LongTensor(y_train)[i:i + bs]
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
