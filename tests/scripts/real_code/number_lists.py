"""A tabular dataset kept as Python lists: each sample is a list of 256 floats and its label.
torch's default_collate turns a batch of such lists into 256 tensors of 64 values, one for each
position, and the loop stacks them back into rows: collation is most of making each batch, and
__getitem__ itself costs nothing. Options: --steps, --workers."""
import argparse
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--workers", type=int, default=0)
a = p.parse_args()


class Rows(Dataset):
    def __init__(self, n: int, d: int) -> None:
        rnd = random.Random(0)
        self.rows = [[rnd.random() for _ in range(d)] for _ in range(n)]
        self.labels = [rnd.randrange(10) for _ in range(n)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i], self.labels[i]


torch.manual_seed(0)
loader = DataLoader(Rows(4000, 256), batch_size=64, shuffle=True, num_workers=a.workers)
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
while step < a.steps:
    for cols, y in loader:
        x = torch.stack(cols, dim=1).float()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
print("done", step)
