"""A siamese network whose dataset draws each sample's positive partner by scanning every label it
holds (`same = [j for j in range(len(self.labels)) if self.labels[j] == y and j != i]` in
__getitem__): 60,000 labels a sample. gpubottle said "Python per element (comprehensions over the
sample's values)", which they are not. It should name the scan, with the indices by class made
once in __init__ (60 batches 6.7 s -> 2.1 s here). Options: --steps."""
import argparse
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, n=60000, classes=100):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 64, generator=g)
        self.labels = torch.randint(0, classes, (n,), generator=g).tolist()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        y = self.labels[i]
        same = [j for j in range(len(self.labels)) if self.labels[j] == y and j != i]
        j = random.choice(same)
        return self.x[i], self.x[j]


ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()
random.seed(0)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
loader = DataLoader(Pairs(), batch_size=64, shuffle=True)
for step, (x1, x2) in enumerate(loader):
    loss = (1 - nn.functional.cosine_similarity(net(x1), net(x2))).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 == a.steps:
        break
print(f"loss {loss.item():.4f}")
