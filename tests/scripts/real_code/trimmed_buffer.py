"""A DQN-style replay buffer kept as a list of (state, action) pairs in a function, trimmed with
pop(0) at a capacity: the run's memory rises while it fills and stays level once it is full (here
~100 MB over the first 6 s, then flat). Options: --steps, --capacity."""

import argparse
import random

import torch
from torch import nn


def sample_batch(buffer, k):
    batch = random.sample(buffer, k)
    return torch.stack([b[0] for b in batch]), torch.tensor([b[1] for b in batch])


def run(steps, capacity):
    net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    buffer = []
    for _step in range(steps):
        for _ in range(8):
            buffer.append((torch.randn(32), random.randrange(4)))
            if len(buffer) > capacity:
                buffer.pop(0)
        if len(buffer) < 256:
            continue
        x, a = sample_batch(buffer, 64)
        loss = nn.functional.cross_entropy(net(x), a)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=18000)
    p.add_argument("--capacity", type=int, default=100000)
    args = p.parse_args()
    run(args.steps, args.capacity)
