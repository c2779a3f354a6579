"""A tabular Dataset of the user's, as tutorials write it: numpy arrays turned into tensors in
__init__, __getitem__ returning one row and its label. The DataLoader calls it once a sample and
stacks 256 rows a batch, which costs about as much as the small MLP's step. Options: --epochs."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Tabular(Dataset):
    def __init__(self, features, labels):
        self.features = torch.as_tensor(features, dtype=torch.float32)
        self.labels = torch.as_tensor(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.features[idx], self.labels[idx]


p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
rng = np.random.default_rng(0)
X = rng.standard_normal((100_000, 40)).astype(np.float32)
y = (X[:, 0] > 0).astype(np.int64)
train = Tabular(X, y)
loader = DataLoader(train, batch_size=256, shuffle=True)
model = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(a.epochs):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
