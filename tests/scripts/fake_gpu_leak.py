"""A loop on a fake GPU (tests/support/fake_cuda.py) whose allocated memory climbs, while the script keeps
every step's output in a list: gpubottle should project the OOM and name the list."""
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import fake_cuda  # noqa: E402

fake_cuda.install()
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 16.0
model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
outputs_log = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    out = model(torch.randn(256, 64))
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    outputs_log.append(out.detach())
    time.sleep(0.005)
