"""A recommender-shaped model: an nn.Embedding of 100,000 items (dense gradients, torch's default)
under Adam, batches of 128 users x 4 item ids. Each step the backward fills a gradient for every row
and Adam updates every row, for the ~500 rows the batch read. Options: --steps."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
a = p.parse_args()
torch.manual_seed(0)
ITEMS = 100_000
ids, target = torch.randint(0, ITEMS, (20_000, 4)), torch.rand(20_000)
loader = DataLoader(TensorDataset(ids, target), batch_size=128, shuffle=True)


class Recommender(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.items = nn.Embedding(ITEMS, 32)
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.items(x).mean(1)).squeeze(1)


model = Recommender()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step = 0
for xb, yb in loader:
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if step == a.steps:
        break
print("done", step)
