"""A training loop beside a thread that watches its losses for divergence "as fast as possible":
no sleep in its loop, so it runs Python without pause and holds the interpreter lock the loop
needs back after every torch op (5 ms at a time, the switch interval). Measured on 2 cores: 782
steps 23 s an epoch with the thread, 0.8 s without it. Options: --steps."""
import argparse
import collections
import threading

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
a = p.parse_args()
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), 0.01)
X, Y = torch.randn(4096, 256), torch.randint(0, 10, (4096,))
history: collections.deque[float] = collections.deque(maxlen=1000)
stop = False


def watch_losses() -> None:
    while not stop:
        if history and sum(history) / len(history) > 1e6:
            print("diverged")


threading.Thread(target=watch_losses, daemon=True).start()
for step in range(a.steps):
    i = step * 64 % len(X)
    loss = nn.functional.cross_entropy(model(X[i:i + 64]), Y[i:i + 64])
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(loss.item())
stop = True
