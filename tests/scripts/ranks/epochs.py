"""A DDP job (gloo, CPU) that trains whole epochs, under torchrun: without --sampler every rank
iterates the whole dataset (no DistributedSampler); with it each rank takes its share and calls
set_epoch. Each sample costs --sample-ms of the main process's time (num_workers=0)."""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Samples(Dataset):
    def __init__(self, n: int, cost_s: float) -> None:
        self.n, self.cost_s = n, cost_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        end = time.perf_counter() + self.cost_s
        while time.perf_counter() < end:  # decoding one sample
            pass
        return torch.full((32,), float(i % 7)), torch.zeros(4)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--sample-ms", type=float, default=2.0)
    p.add_argument("--sampler", action="store_true", help="DistributedSampler: each rank its share")
    a = p.parse_args()
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    data = Samples(a.samples, a.sample_ms / 1000)
    sampler = DistributedSampler(data) if a.sampler else None
    loader = DataLoader(data, batch_size=16, sampler=sampler, shuffle=sampler is None)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                                        torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(a.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"trained {a.epochs} epochs of {len(loader)} batches a rank", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
