"""Changes directory mid-run, then leaves with os._exit (no interpreter shutdown)."""
import os
import tempfile

import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
os.chdir(tempfile.mkdtemp())
for _ in range(30):
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    opt.zero_grad()
print("leaving", flush=True)
os._exit(0)
