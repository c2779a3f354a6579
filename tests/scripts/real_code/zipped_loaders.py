"""Two DataLoaders zipped in one loop (a labelled and an unlabelled stream, two domains): one makes
its samples in memory, the other reads each for 1 ms in one worker. Both give the loop the same
number of batches; the slow one is the input. Options: --steps, --read-ms."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Source(Dataset):
    def __init__(self, read_ms: float) -> None:
        self.read_s = read_ms / 1000

    def __len__(self) -> int:
        return 4000

    def __getitem__(self, i: int):
        if self.read_s:
            time.sleep(self.read_s)  # a read
        return torch.randn(64), i % 2


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--read-ms", type=float, default=1.0)
    a = p.parse_args()
    labelled = DataLoader(Source(0), batch_size=32, shuffle=True)
    unlabelled = DataLoader(Source(a.read_ms), batch_size=32, shuffle=True, num_workers=1)
    model = torch.nn.Linear(64, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (xa, ya), (xb, yb) in zip(labelled, unlabelled):
        loss = torch.nn.functional.cross_entropy(model(torch.cat([xa, xb])), torch.cat([ya, yb]))
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
