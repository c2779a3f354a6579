"""Short epochs over a small dataset, with the DataLoader built inside the epoch loop and workers
started by spawn (the default on macOS and Windows, and what many clusters configure): every epoch
waits for two fresh workers to re-import this script and torch. Options: --once builds the loader
before the loop with persistent_workers=True (the fix); --persistent keeps building it each epoch
but with persistent_workers=True (which alone changes nothing)."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Tokens(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, generator=g)
        return x, int(x.sum() > 0)


def make_loader(ds, persistent: bool) -> DataLoader:
    return DataLoader(ds, batch_size=32, shuffle=True, num_workers=2,
                      multiprocessing_context="spawn", persistent_workers=persistent)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--samples", type=int, default=320)
    p.add_argument("--once", action="store_true")
    p.add_argument("--persistent", action="store_true")
    a = p.parse_args()
    ds = Tokens(a.samples)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = make_loader(ds, True) if a.once else None
    start = time.perf_counter()
    for epoch in range(a.epochs):
        if not a.once:
            loader = make_loader(ds, a.persistent)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
