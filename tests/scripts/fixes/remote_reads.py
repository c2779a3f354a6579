"""Each sample waits ~12 ms on a remote read (a sleep stands in for the latency) and then decodes
briefly; the loop's own step is short. Far more workers than cores are what hides such waits, since
a waiting worker needs no core. Option --num-workers (default 2)."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class RemoteShards(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        time.sleep(0.012)  # the read: waiting, not computing
        x = torch.randn(128, generator=torch.Generator().manual_seed(i))
        return x * 0.5 + 0.1, i % 4


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--samples", type=int, default=1600)
    a = p.parse_args()
    loader = DataLoader(RemoteShards(a.samples), batch_size=16, num_workers=a.num_workers,
                        persistent_workers=a.num_workers > 0)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = time.perf_counter()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
