"""A training log kept as a list and written whole with json.dump after every step: each step writes
the file again, longer each time, and the steps slow as the run goes (1.6 ms -> 7.4 ms over 3,000
steps). gpubottle should name that line with one JSON line appended a step (20.4 s -> 2.8 s a run
here). Options: --steps."""
import argparse
import json
import os
import tempfile
import time

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=3000)
a = ap.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
X, Y = torch.randn(10000, 64), torch.randint(0, 10, (10000,))
path = os.path.join(tempfile.mkdtemp(), "history.json")
history = []
for step in range(a.steps):
    i = torch.randint(0, 10000, (64,))
    loss = nn.functional.cross_entropy(model(X[i]), Y[i])
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append({"step": step, "loss": loss.item(), "time": time.time(), "lr": 0.01})
    with open(path, "w") as f:
        json.dump(history, f)
print("steps", len(history))
