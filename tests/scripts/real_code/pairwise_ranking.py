"""Learning to rank: a margin ranking loss summed over every pair of a query's documents in a
Python loop, `for i, j in itertools.combinations(range(24), 2): ... loss = loss + torch.relu(1 -
sign * (s[i] - s[j]))` (276 pairs: a few ops each, and backward runs each pair's nodes one at a
time). gpubottle named the line with "make the ops on that line cheaper". It should name the pair
loop with the same ops on all pairs at once (s[:, None] - s[None, :], a mask of the pairs kept):
the step faster, the same loss. Options: --steps."""
import argparse
import itertools

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
a = ap.parse_args()
torch.manual_seed(0)
Q, DOCS, F = 2000, 24, 32
feats = torch.randn(Q, DOCS, F)
rel = torch.randint(0, 4, (Q, DOCS)).float()
scorer = nn.Sequential(nn.Linear(F, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(scorer.parameters(), lr=1e-3)
for _step in range(a.steps):
    q = torch.randint(0, Q, (1,)).item()
    s = scorer(feats[q]).squeeze(1)
    loss = torch.zeros(())
    for i, j in itertools.combinations(range(DOCS), 2):
        if rel[q, i] == rel[q, j]:
            continue
        sign = 1.0 if rel[q, i] > rel[q, j] else -1.0
        loss = loss + torch.relu(1.0 - sign * (s[i] - s[j]))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
