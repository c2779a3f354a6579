"""Training with 2 DataLoader workers whose samples wait on reads, plus a process the script starts
for itself (a metrics uploader compressing logs: a busy core), forked from the main process like
the workers: counted as a third worker, it made the loader look busy; it is the script's own
side process, competing with the training for the cores."""
import argparse
import multiprocessing as mp
import time
import zlib

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def uploader(stop):
    blob = bytes(range(256)) * 4000
    while not stop.is_set():
        zlib.compress(blob, 9)


class Slow(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        time.sleep(0.0005)  # a read from a network store
        return torch.randn(128), i % 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    loader = DataLoader(Slow(), batch_size=16, num_workers=a.workers)
    model = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    stop = mp.Event()
    side = mp.Process(target=uploader, args=(stop,), daemon=True)
    side.start()
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i + 1 == a.steps:
            break
    print(f"{i + 1} steps in {time.perf_counter() - t0:.2f} s")
    stop.set()
    side.join()


if __name__ == "__main__":
    main()
