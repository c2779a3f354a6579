"""A step-counted loop fed by itertools.cycle(loader), as GAN and semi-supervised code often is:
cycle iterates the loader once, keeps every batch, and replays them in the same order after the
first pass (no reshuffle, no new augmentation, the whole pass held in memory). Options: --steps,
--workers."""
import argparse
import itertools

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--workers", type=int, default=0)
a = p.parse_args()


class Flips(Dataset):
    def __len__(self) -> int:
        return 512

    def __getitem__(self, i):
        x = torch.rand(3, 32, 32)
        return (x.flip(-1) if torch.rand(()) < 0.5 else x), i % 10  # a random flip per sample


torch.manual_seed(0)
loader = DataLoader(Flips(), batch_size=32, shuffle=True, num_workers=a.workers)
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(itertools.cycle(loader)):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 == a.steps:
        break
print("done", step + 1)
