"""Gradient accumulation: four micro-batches per optimizer step (the step the clock sees is four
batches), one worker reading samples that wait on storage. The worker fix must be sized for the
four batches a step draws, not one. Options: --num-workers, --epochs."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        time.sleep(0.0008)  # a read that waits on storage
        return torch.randn(128), i % 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=1)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    loader = DataLoader(Slow(), batch_size=32, shuffle=True, num_workers=a.num_workers)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    accum = 4
    for epoch in range(a.epochs):
        for i, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
        print(f"epoch {epoch}: loss {loss.item() * accum:.3f}")


if __name__ == "__main__":
    main()
