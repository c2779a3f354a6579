"""A training loop fed by a Python generator that makes each batch with per-sample numpy work, on
the main thread (no DataLoader). Option --workers N applies gpubottle's fix: the generator wrapped
in an IterableDataset and read through DataLoader(batch_size=None, num_workers=N), each worker making
its share of the batches."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--batches", type=int, default=240)
p.add_argument("--workers", type=int, default=0)
a = p.parse_args()


def make_sample(rng):
    img = rng.random((48, 48)).astype(np.float32)
    for _ in range(6):  # a slow, hand-written smoothing pass per sample
        img = (img + np.roll(img, 1, 0) + np.roll(img, 1, 1)) / 3.0
    return img.ravel()


def batches(n, seed=0, batch_size=48):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = np.stack([make_sample(rng) for _ in range(batch_size)])
        yield torch.from_numpy(x), torch.from_numpy((x[:, 0] > 0.5).astype(np.int64))


class Batches(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        share = a.batches // info.num_workers if info else a.batches
        return batches(share, seed=info.id if info else 0)


torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(48 * 48, 256), nn.ReLU(), nn.Linear(256, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
source = DataLoader(Batches(), batch_size=None, num_workers=a.workers) if a.workers else batches(a.batches)
for x, y in source:
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
