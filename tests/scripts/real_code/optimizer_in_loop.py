"""A loop that builds its optimizer inside the loop, as a misplaced line does: every step gets a
new Adam with empty state. Building one costs ~16 us here; the harm is that Adam never keeps its
moment estimates. Options: --epochs."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8192, 128), torch.randint(0, 10, (8192,))),
                    batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
for epoch in range(a.epochs):
    for x, y in loader:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
