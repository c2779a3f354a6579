"""Length-bucketed batches for variable-length sequences: the batch sampler picks each batch by
sorting a random pool of lengths, in Python, in the main process (the DataLoader asks its sampler
for indices there, whatever num_workers). --once buckets the epoch once where __iter__ starts (the
fix): sort every index by length, cut into batches, shuffle the batches."""
import argparse
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler


class Sequences(Dataset):
    def __init__(self, n: int) -> None:
        rng = random.Random(0)
        self.lengths = [rng.randint(8, 64) for _ in range(n)]

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int):
        n = self.lengths[i]
        return torch.randn(n, 32), i % 5


class BucketSampler(Sampler):
    def __init__(self, lengths, batch_size: int, pool: int, once: bool) -> None:
        self.lengths, self.batch_size, self.pool, self.once = lengths, batch_size, pool, once

    def __len__(self) -> int:
        return len(self.lengths) // self.batch_size

    def __iter__(self):
        if self.once:
            order = sorted(range(len(self.lengths)), key=lambda i: self.lengths[i])
            batches = [order[k:k + self.batch_size] for k in range(0, len(order), self.batch_size)]
            random.shuffle(batches)
            yield from batches[:len(self)]
            return
        for _ in range(len(self)):
            pool = random.sample(range(len(self.lengths)), self.pool)
            pool.sort(key=lambda i: self.lengths[i])
            start = random.randrange(0, self.pool - self.batch_size)
            yield pool[start:start + self.batch_size]


def collate(items):
    xs, ys = zip(*items)
    return nn.utils.rnn.pad_sequence(list(xs), batch_first=True), torch.tensor(ys)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=200_000)
    p.add_argument("--batches", type=int, default=150)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pool", type=int, default=50_000)
    p.add_argument("--once", action="store_true")
    a = p.parse_args()
    ds = Sequences(a.samples)
    sampler = BucketSampler(ds.lengths, 32, a.pool, a.once)
    loader = DataLoader(ds, batch_sampler=sampler, num_workers=a.workers, collate_fn=collate)
    model = nn.GRU(32, 64, batch_first=True)
    head = nn.Linear(64, 5)
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-3)
    for step, (x, y) in enumerate(loader):
        out, _ = model(x)
        loss = nn.functional.cross_entropy(head(out[:, -1]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == a.batches:
            break
    print("done", step + 1)


if __name__ == "__main__":
    main()
