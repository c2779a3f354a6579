"""Hidden layers kept in a plain Python list (`self.hidden = [nn.Linear(...) for ...]`): nn.Module
does not register them, so model.parameters(), and the optimizer built from it, leave them out:
they stay as initialised, and each backward computes their gradients for nothing. nn.ModuleList
registers them. Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(32, 256)
        self.hidden = [nn.Linear(256, 256) for _ in range(3)]
        self.out = nn.Linear(256, 10)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for layer in self.hidden:
            h = torch.relu(layer(h))
        return self.out(h)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(20000, 32), torch.randint(0, 10, (20000,)))
    loader = DataLoader(data, batch_size=128, shuffle=True)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(a.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print("done")
