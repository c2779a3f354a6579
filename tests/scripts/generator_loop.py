"""A training loop fed by a Python generator (no DataLoader) that makes each batch with slow
per-sample numpy work: the main process spends most of each step making batches."""
import sys

import numpy as np
import torch
from torch import nn


def make_sample(rng):
    img = rng.random((48, 48)).astype(np.float32)
    for _ in range(6):  # a slow, hand-written smoothing pass per sample
        img = (img + np.roll(img, 1, 0) + np.roll(img, 1, 1)) / 3.0
    return img.ravel()


def batches(n, batch_size=48):
    rng = np.random.default_rng(0)
    for _ in range(n):
        x = np.stack([make_sample(rng) for _ in range(batch_size)])
        yield torch.from_numpy(x), torch.from_numpy((x[:, 0] > 0.5).astype(np.int64))


model = nn.Sequential(nn.Linear(48 * 48, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in batches(int(sys.argv[1]) if len(sys.argv) > 1 else 600):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
