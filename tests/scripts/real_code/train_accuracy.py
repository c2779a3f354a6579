"""Each epoch ends with the accuracy over the whole training set: a second pass over the training
loader (persistent workers), under no_grad, as long as the epoch's training. The probes saw one
iterator (a persistent loader reuses it), so the passes' batches were the training's: "the loop
waits 163% of the step", and the evaluation "no DataLoader"."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, i):
        time.sleep(0.0004)
        g = torch.Generator().manual_seed(i)
        return torch.randn(64, generator=g), i % 10


def accuracy(model, loader):
    model.eval()
    hit = n = 0
    with torch.no_grad():
        for x, y in loader:
            hit += (model(x).argmax(1) == y).sum().item()
            n += len(y)
    model.train()
    return hit / n


def main():
    loader = DataLoader(Rows(), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: train accuracy {accuracy(model, loader):.3f}")


if __name__ == "__main__":
    main()
