"""Shaped like a loop from a public blog post on GPU utilisation, run on a CPU: 8 DataLoader
workers on a 2-core machine, each sample a 0.1 ms wait and 16 KB of float32 (1 MB batches), a small
model. The CPU is the limit: 8, 10 and 16 workers take the same time, 2 are slower; the batches'
size and their hand-over between processes are the cost. Options: --workers, --batches."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, i: int):
        time.sleep(0.0001)
        return torch.full((4096,), float(i % 7)), i % 10


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batches", type=int, default=400)
    a = p.parse_args()
    model = torch.nn.Sequential(torch.nn.Linear(4096, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Features(), batch_size=64, num_workers=a.workers, persistent_workers=True)
    start = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == a.batches:
            break
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
