"""Data-starved (GPU): a fast GPU waits for batches made one by one in the training process.

Expected verdict: data-starved. Each sample takes ~2 ms of CPU work in __getitem__ and the
DataLoader has num_workers=0, so the GPU sits idle while the main process makes the next batch, with
most of the machine's cores unused. gpubottle should propose a worker count computed from the
measured batch time and the cores available.

    gpubottle run examples/gpu/data_starved.py
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowSamples(Dataset):
    def __len__(self) -> int:
        return 64 * 40

    def __getitem__(self, i: int):
        rng = np.random.default_rng(i)
        img = rng.random((64, 64)).astype(np.float32)
        for _ in range(8):  # a hand-written blur: CPU time per sample
            img = (img + np.roll(img, 1, 0) + np.roll(img, 1, 1)) / 3.0
        return torch.from_numpy(img).flatten(), i % 10


def main() -> None:
    dev = torch.device("cuda")
    loader = DataLoader(SlowSamples(), batch_size=64, num_workers=0)
    model = nn.Sequential(nn.Linear(4096, 2048), nn.ReLU(), nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"final loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
