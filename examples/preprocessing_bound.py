"""Preprocessing-bound: every core already works on per-sample augmentation, and still too slowly.

Expected verdict: preprocessing-bound. __getitem__ decodes and augments an image in Python (Pillow
rotate, resize, blur, and a hand-written colour jitter that loops over pixels); the DataLoader already
runs one worker per core, so the workers saturate the CPU and the loop still waits. More workers cannot
help; the per-sample work must get cheaper, and gpubottle should name `colour_jitter`, where most of
the loader's CPU goes.

    gpubottle run examples/preprocessing_bound.py
"""

import argparse
import os

import numpy as np
import torch
from PIL import Image, ImageFilter
from torch import nn
from torch.utils.data import DataLoader, Dataset


def random_rotate(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    return img.rotate(float(rng.uniform(-20, 20)))


def colour_jitter(arr: np.ndarray) -> np.ndarray:
    """A hand-written jitter, a few pixels at a time: the kind of Python loop that hides in real
    augmentation code."""
    for r in range(arr.shape[0]):
        for c in range(0, arr.shape[1], 2):
            arr[r, c : c + 2] = arr[r, c : c + 2] * (1.0 + 0.01 * (r % 7)) - 0.005
    return arr


class AugmentedImages(Dataset):
    def __init__(self, n: int, size: int = 96) -> None:
        self.n, self.size = n, size

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        rng = np.random.default_rng(i)
        img = Image.fromarray(rng.integers(0, 255, (160, 160, 3), dtype=np.uint8))
        img = random_rotate(img, rng).resize((self.size, self.size))
        img = img.filter(ImageFilter.GaussianBlur(1.5))
        arr = colour_jitter(np.asarray(img, dtype=np.float32) / 255.0)
        x = torch.from_numpy(arr).permute(2, 0, 1).contiguous()
        return x, i % 10


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=1536)
    p.add_argument("--batch-size", type=int, default=32)
    a = p.parse_args()
    loader = DataLoader(AugmentedImages(a.samples), batch_size=a.batch_size, shuffle=True,
                        num_workers=cores(), persistent_workers=True)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                          nn.Flatten(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"final loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
