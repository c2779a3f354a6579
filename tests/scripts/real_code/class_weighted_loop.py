"""A multi-label classifier whose weighted loss is summed a class at a time:
`for c in range(C): loss = loss + F.binary_cross_entropy_with_logits(logits[:, c], y[:, c],
pos_weight=pos_weight[c])`. Each class's ops are small calls at the script's own line, and nodes
backward then runs one at a time: the training 2.2 s of 4.2 s, the loss line's samples in torch's
functions, so gpubottle read compute-bound with torch.compile. It should name the class loop with
one call over all columns (pos_weight=pos_weight): the script 4.2 s -> 2.3 s here, the same loss.
Options: --steps."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
a = ap.parse_args()
torch.manual_seed(0)
C = 200
X = torch.randn(20000, 128)
Y = (torch.rand(20000, C) < 0.05).float()
pos_weight = torch.rand(C) * 5 + 1
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, C))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for _step in range(a.steps):
    idx = torch.randint(0, len(X), (256,))
    logits = model(X[idx])
    y = Y[idx]
    loss = 0.0
    for c in range(C):
        loss = loss + F.binary_cross_entropy_with_logits(logits[:, c], y[:, c], pos_weight=pos_weight[c])
    loss = loss / C
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
