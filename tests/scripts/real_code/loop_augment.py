"""Augmentation done in the training loop, batch by batch (as kornia-, mixup- or cutmix-style code
does): `x, y = mix_rows(x, y, rng)` rebuilds every batch row by row in Python before the model sees
it. Its output feeds the model every step, so calling it every N steps is no fix (that trains on
unaugmented batches); it must get cheaper, or move into the DataLoader's workers. Options: --steps."""
import argparse
import random

import torch
from torch import nn


def mix_rows(x: torch.Tensor, y: torch.Tensor, rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
    rows, labels = x.tolist(), y.tolist()
    out = []
    for r in rows:
        other = rows[rng.randrange(len(rows))]
        lam = rng.random()
        out.append([lam * a + (1 - lam) * b for a, b in zip(r, other)])
    return torch.tensor(out), torch.tensor(labels)


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
rng = random.Random(0)
model = nn.Sequential(nn.Linear(96, 128), nn.ReLU(), nn.Linear(128, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(4096, 96)
targets = torch.randint(0, 8, (4096,))
for step in range(a.steps):
    i = (step * 64) % (4096 - 64)
    x, y = data[i:i + 64], targets[i:i + 64]
    x, y = mix_rows(x, y, rng)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
