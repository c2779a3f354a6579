"""OOM risk (host memory): a training loop that keeps every step's activations "for logging".

Expected verdict: oom-risk. Each step appends a tensor that still holds its autograd graph to a
history list (the classic `history.append(loss_tensor)` / `total += loss` mistake, here with the
features as well), so the process grows by tens of MB per second and would exhaust RAM within the
hour. gpubottle should project when memory runs out and point at what is kept across steps.

    gpubottle run examples/oom_risk.py
"""

import argparse
import time

import torch
from torch import nn


def batches(n: int, dim: int):
    """A generator of in-memory batches (no DataLoader)."""
    for _ in range(n):
        yield torch.randn(256, dim), torch.randint(0, 2, (256,))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=14.0)
    p.add_argument("--dim", type=int, default=512)
    a = p.parse_args()
    model = nn.Sequential(nn.Linear(a.dim, a.dim), nn.ReLU(), nn.Linear(a.dim, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    history = []
    end = time.monotonic() + a.seconds
    for x, y in batches(10**9, a.dim):
        feats = model[0](x)
        loss = nn.functional.cross_entropy(model[2](torch.relu(feats)), y)
        opt.zero_grad()
        loss.backward(retain_graph=False)
        opt.step()
        history.append((feats, loss))  # keeps 0.5 MB of activations per step, forever
        time.sleep(0.01)
        if time.monotonic() > end:
            break
    print(f"kept {len(history)} steps of history")


if __name__ == "__main__":
    main()
