"""A classifier that keeps a running confusion matrix during training, counted a prediction at a
time: `for t, p in zip(y, pred): cm[t, p] += 1` (256 a step, an indexing op and an add each:
about half of each step). gpubottle said "write a row in one op" (pad_sequence, an indexed write
that would count a repeated position once) and "call it every 10 steps" (a tenth of the counts).
It should say the counts are added one at a time, with torch.bincount: the step faster, the same
matrix. Options: --steps."""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=2000)
a = ap.parse_args()
torch.manual_seed(0)
C = 20
X = torch.randn(30_000, 64)
Y = torch.randint(0, C, (30_000,))
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, C))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
cm = torch.zeros(C, C, dtype=torch.long)
for _step in range(a.steps):
    idx = torch.randint(0, len(X), (256,))
    x, y = X[idx], Y[idx]
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    pred = logits.argmax(1)
    for t, p in zip(y, pred):
        cm[t, p] += 1
print(f"accuracy {(cm.diag().sum() / cm.sum()).item():.4f}")
