"""A set classifier whose forward encodes each set of the batch on its own, in a Python loop over
the batch, then averages each set's encodings. Options: --steps."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=150)
a = p.parse_args()
torch.manual_seed(0)


class SetEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128))
        self.head = nn.Linear(128, 5)

    def forward(self, x):
        feats = []
        for i in range(x.size(0)):
            feats.append(self.enc(x[i]).mean(0))
        return self.head(torch.stack(feats))


model = SetEncoder()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
X, Y = torch.randn(4096, 16, 64), torch.randint(0, 5, (4096,))
for _step in range(a.steps):
    idx = torch.randint(0, 4096, (64,))
    loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f}")
