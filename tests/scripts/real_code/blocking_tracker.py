"""A loop that reports its metrics through a blocking call every step (an experiment tracker's
synchronous HTTP request, 10 ms here as a sleep): the loop's thread is off the CPU for most of
the step, so no cheaper math helps. The fix calls it less often, or hands it to a background
thread. Options: --steps."""
import argparse
import time

import torch
from torch import nn


def report_metrics(step: int, loss: float) -> None:
    time.sleep(0.01)  # waits for the tracker's server to answer


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Linear(128, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 128), torch.randint(0, 10, (64,))
for step in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    report_metrics(step, loss.item())
