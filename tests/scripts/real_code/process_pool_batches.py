"""Batches built each step by a multiprocessing.Pool of two processes (processes, not threads): the
loop waits in pool.map while the workers make the samples in Python and send them back pickled.
Measured when written (2 cores, 300 steps): 3.0 s."""
import math
import time
from multiprocessing import Pool

import torch
from torch import nn

N_FEAT = 256


def make_sample(i):
    row = [math.sin(i * 0.01 + j * 0.1) * math.cos(j * 0.3) for j in range(N_FEAT)]
    return row, i % 10


def main():
    model = nn.Sequential(nn.Linear(N_FEAT, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    with Pool(2) as pool:
        for step in range(300):
            samples = pool.map(make_sample, range(step * 64, step * 64 + 64))
            x = torch.tensor([s[0] for s in samples])
            y = torch.tensor([s[1] for s in samples])
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print("done", round(time.time() - t0, 2))


if __name__ == "__main__":
    main()
