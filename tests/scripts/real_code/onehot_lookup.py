"""A bag-of-words classifier whose token embeddings are looked up by a one-hot matrix product
(`F.one_hot(ids, VOCAB).float() @ self.emb`): each step writes a 32 x 64 x 20,000 tensor of zeros
and ones and multiplies every zero, forward and backward. gpubottle read it as the model's own
math, torch.compile first. It should name the product with F.embedding(ids, W), the same rows
and gradient (200 steps 39.8 s -> 2.8 s here). Options: --steps."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D, LEN = 20000, 64, 64


class Bow(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(VOCAB, D) * 0.02)
        self.head = nn.Linear(D, 2)

    def forward(self, ids):
        onehot = F.one_hot(ids, VOCAB).float()  # (B, L, V)
        vecs = onehot @ self.emb  # (B, L, D)
        return self.head(vecs.mean(1))


ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
a = ap.parse_args()
torch.manual_seed(0)
model = Bow()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(a.steps):
    ids = torch.randint(0, VOCAB, (32, LEN))
    y = torch.randint(0, 2, (32,))
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
