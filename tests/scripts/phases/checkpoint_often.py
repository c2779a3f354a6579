"""A compute-light training loop that saves the model and its Adam state (~50 MB) with torch.save
every --save-every steps (default 2): the saves, not the model, take a large part of the run.
Saving less often
is the fix. Options: --steps, --save-every, --width, --out."""
import argparse
import os
import tempfile
import time

import torch
from torch import nn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--save-every", type=int, default=2)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # 3 layers of width^2 float32: ~12 MB of weights at 1024, and Adam's two moments beside them.
    model = nn.Sequential(nn.Linear(a.width, a.width), nn.ReLU(), nn.Linear(a.width, a.width),
                          nn.ReLU(), nn.Linear(a.width, a.width))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    out = a.out or os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    x, y = torch.randn(8, a.width), torch.randn(8, a.width)
    start = time.perf_counter()
    for step in range(1, a.steps + 1):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % a.save_every == 0:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, out)
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
