"""A supervised contrastive loss written by hand: the batch's similarity matrix filled pair by
pair, `sim[i, j] = F.cosine_similarity(z[i], z[j], dim=0) / temp`. Each pair's ops are nodes
backward then runs one at a time, and each element written in place makes a node that copies the
matrix's whole gradient: backward held 4.0 s of 5.5 s of steps, the loop's own code the rest.
gpubottle read an element-wise fill (pad_sequence) or compute-bound; it should name the loop with
all pairs at once (zn @ zn.T of zn = F.normalize(z, dim=1)), its share with backward's: the
script 7.0 s -> 1.8 s here, the same loss. Options: --steps."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=120)
a = ap.parse_args()
torch.manual_seed(0)
X = torch.randn(4096, 32)
Y = torch.randint(0, 10, (4096,))
net = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64))
opt = torch.optim.SGD(net.parameters(), lr=0.05)


def contrastive(z, y, temp=0.1):
    B = z.shape[0]
    sim = torch.zeros(B, B)
    for i in range(B):
        for j in range(B):
            sim[i, j] = F.cosine_similarity(z[i], z[j], dim=0) / temp
    pos = (y[:, None] == y[None, :]).float()
    logp = sim.log_softmax(1)
    return -(logp * pos).sum(1).div(pos.sum(1)).mean()


for _step in range(a.steps):
    idx = torch.randint(0, 4096, (24,))
    z = net(X[idx])
    loss = contrastive(z, Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
