"""Hard-example mining: each step scores every row and trains on the 256 highest, picked with
np.argsort(scores)[-256:] (a sort of all 400,000 to keep 256). Measured when written: 24 ms a call,
0.9 ms as torch.topk. Options: --steps, --rows."""

import argparse

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
p.add_argument("--rows", type=int, default=400_000)
args = p.parse_args()

feats = np.random.rand(args.rows, 8).astype(np.float32)
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for _step in range(args.steps):
    scores = feats @ np.random.rand(8).astype(np.float32)
    hard = np.argsort(scores)[-256:]
    xb = torch.from_numpy(feats[hard])
    yb = torch.from_numpy((scores[hard] > scores.mean()).astype(np.int64))
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
