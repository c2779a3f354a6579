"""Shaped like pytorch/examples' ImageNet trainer: the worker count comes from the command line
(-j/--workers, default 0) and reaches DataLoader as num_workers=args.workers; each sample waits on
a slow read. The fix is an option to pass (or a default to change), not a literal at the call."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowReads(Dataset):
    def __len__(self) -> int:
        return 480

    def __getitem__(self, i: int):
        time.sleep(0.004)  # a read from slow storage
        return torch.randn(32), i % 2


parser = argparse.ArgumentParser()
parser.add_argument("-j", "--workers", default=0, type=int, help="data loading workers")
parser.add_argument("-b", "--batch-size", default=16, type=int)


def main() -> None:
    args = parser.parse_args()
    model = torch.nn.Linear(32, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(SlowReads(), batch_size=args.batch_size, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    start = time.perf_counter()
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"num_workers={loader.num_workers} elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
