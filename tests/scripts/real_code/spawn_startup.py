"""Tokenised text held in memory as Python lists, read by four DataLoader workers started with
spawn (the default on macOS and Windows): the whole dataset is pickled into each worker before the
first batch, so starting the workers is most of start-up. Options: --samples, --steps, --workers."""
import argparse
import random

import torch
from torch.utils.data import DataLoader, Dataset


class Tokenised(Dataset):
    def __init__(self, n: int) -> None:
        rng = random.Random(0)
        self.rows = [{"ids": [rng.randrange(30_000) for _ in range(48)], "label": i % 3} for i in range(n)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        row = self.rows[i]
        return torch.tensor(row["ids"]), row["label"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=150_000)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--workers", type=int, default=4)
    a = p.parse_args()
    loader = DataLoader(Tokenised(a.samples), batch_size=32, shuffle=True, num_workers=a.workers,
                        multiprocessing_context="spawn")
    model = torch.nn.Sequential(torch.nn.EmbeddingBag(30_000, 32), torch.nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (ids, y) in enumerate(loader, 1):
        loss = torch.nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == a.steps:
            break


if __name__ == "__main__":
    main()
