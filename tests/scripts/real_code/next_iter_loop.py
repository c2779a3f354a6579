"""Taking "one batch" each step the way tutorials and notebooks often do: `x, y =
next(iter(loader))` inside the loop. Every step builds a new iterator, which starts the loader's
two workers and stops them after one batch; the loader does not shuffle, so every step also gets
the dataset's first batch. Options: --steps, --shuffle."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=150)
p.add_argument("--shuffle", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
data = TensorDataset(torch.randn(4096, 32), torch.randint(0, 4, (4096,)))
loader = DataLoader(data, batch_size=64, shuffle=a.shuffle, num_workers=2)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(a.steps):
    x, y = next(iter(loader))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
