"""After every step the loop appends its loss to a metrics file and an event to an events file, and
forces both to disk (flush, os.fsync) so that a crash loses nothing: the loop waits on the storage
about a third of each step, off the CPU, while torch's threads keep the cores busy the rest of it.
Forcing the writes every --sync-every steps is the fix. Options: --steps, --sync-every."""
import argparse
import json
import os
import tempfile
import time

import torch
from torch import nn


def persist(*files) -> None:
    for fh in files:
        fh.flush()
        os.fsync(fh.fileno())


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=3000)
p.add_argument("--sync-every", type=int, default=1)
a = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 128)
y = x[:, :1] * 2
folder = tempfile.mkdtemp()
start = time.perf_counter()
with open(os.path.join(folder, "metrics.jsonl"), "w") as metrics, \
        open(os.path.join(folder, "events.log"), "w") as events:
    for step in range(a.steps):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        metrics.write(json.dumps({"step": step, "loss": loss.item()}) + "\n")
        events.write(f"{time.time():.6f} step {step} done\n")
        if (step + 1) % a.sync_every == 0:
            persist(metrics, events)
print(f"elapsed: {time.perf_counter() - start:.2f} s")
