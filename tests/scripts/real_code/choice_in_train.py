"""choice_indices.py's loop as most scripts hold it, in a train() that main() calls: each step's
rows picked with np.random.choice(N, 256, replace=False), which shuffles all N indices to keep 256.
Options: --steps, --rows."""

import argparse

import numpy as np
import torch
from torch import nn


def train(steps: int, rows: int) -> None:
    X = torch.randn(rows, 16)
    Y = (X[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _step in range(steps):
        idx = np.random.choice(rows, 256, replace=False)
        xb, yb = X[idx], Y[idx]
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--rows", type=int, default=1_000_000)
    args = p.parse_args()
    train(args.steps, args.rows)


if __name__ == "__main__":
    main()
