"""An embedding model checked after each epoch by a kNN accuracy over held-out queries, written
as a Python loop over the queries one at a time (`enc(Xv[i:i + 1])`, a distance to the training
bank, a top-k, a vote), under no_grad with no model.eval() and no DataLoader: the passes take most
of the run. Options: --epochs, --batched (the fix: the same ops on all queries at once)."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--batched", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
N, D = 8000, 128
X, Y = torch.randn(N, D), torch.randint(0, 20, (N,))
Xv, Yv = torch.randn(1000, D), torch.randint(0, 20, (1000,))
enc = nn.Sequential(nn.Linear(D, 256), nn.ReLU(), nn.Linear(256, 64))
head = nn.Linear(64, 20)
opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), 1e-3)


def knn_accuracy():
    with torch.no_grad():
        bank = enc(X)
        if a.batched:
            idx = torch.cdist(enc(Xv), bank).topk(5, largest=False).indices
            return int((Y[idx].mode(1).values == Yv).sum()) / len(Xv)
        correct = 0
        for i in range(len(Xv)):
            q = enc(Xv[i:i + 1])
            d = torch.cdist(q, bank)[0]
            nn_idx = d.topk(5, largest=False).indices
            correct += int(Y[nn_idx].mode().values == Yv[i])
    return correct / len(Xv)


for epoch in range(a.epochs):
    perm = torch.randperm(N)
    for b in range(0, N, 128):
        idx = perm[b:b + 128]
        loss = nn.functional.cross_entropy(head(enc(X[idx])), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch, round(loss.item(), 3), knn_accuracy())
