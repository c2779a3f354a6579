"""Samples built by a pure-Python feature loop in __getitem__ (one thread, all CPU), batches made in
the training process itself (num_workers=0 by default), and a model computed on one torch thread
(the script pins it, for steady latency): a second core sits idle while the loop alternates
between loading and computing."""
import argparse
import math
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self, n: int, dim: int = 96) -> None:
        self.n, self.dim = n, dim

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        values = [math.sin(i * 0.001 + k) for k in range(self.dim * 12)]
        feats = [sum(values[k::self.dim]) / 12 for k in range(self.dim)]
        return torch.tensor(feats), i % 10


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--samples", type=int, default=6400)
    a = p.parse_args()
    torch.set_num_threads(1)
    loader = DataLoader(Features(a.samples), batch_size=32, shuffle=True, num_workers=a.num_workers)
    model = nn.Sequential(nn.Linear(96, 1536), nn.GELU(), nn.Linear(1536, 1536), nn.GELU(),
                          nn.Linear(1536, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
