"""DP-SGD written by hand: each sample's gradients taken in a Python loop
(torch.autograd.grad a sample), clipped to norm 1, summed, noised. gpubottle named the model
called once per sample and said to call it once on the batch, which would give the sum of the
gradients, not each one to clip. It should say per-sample gradients in one batched call
(torch.func.vmap over torch.func.grad): 4.6 s -> 2.7 s a run here, the same clipped gradients.
Options: --steps."""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=500)
a = ap.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, Y = torch.randn(20000, 64), torch.randint(0, 10, (20000,))
C = 1.0
for _ in range(a.steps):
    idx = torch.randint(0, len(X), (32,))
    x, y = X[idx], Y[idx]
    grads = [torch.zeros_like(p) for p in model.parameters()]
    for i in range(len(x)):
        loss = nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1])
        g = torch.autograd.grad(loss, list(model.parameters()))
        norm = torch.sqrt(sum((gi ** 2).sum() for gi in g))
        scale = min(1.0, C / (norm.item() + 1e-6))
        for acc, gi in zip(grads, g):
            acc += gi * scale
    for p, acc in zip(model.parameters(), grads):
        p.grad = acc / len(x) + 0.01 * torch.randn_like(acc)
    opt.step()
print("done")
