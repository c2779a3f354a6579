"""Keeps every batch in a module-level list: host memory climbs ~40 MB/s until the run ends (the
sleep sets the pace, so a loaded machine changes it little)."""
import sys
import time

import torch
from torch import nn

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 14.0
model = nn.Linear(256, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
seen_batches = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    x = torch.randn(512, 256)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    seen_batches.append(x)  # "for later analysis": never freed
    time.sleep(0.01)
