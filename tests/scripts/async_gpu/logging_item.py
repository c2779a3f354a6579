"""A GPU-bound loop whose logging helper reads the loss every step (.item()): the host waits there
for the GPU's 10 ms of work, so that is where its stack samples land. Device truth: 10 ms a step,
the GPU busy throughout: compute-bound, not the logging's cost."""

import argparse

import torch
from common import host_work, kernel, on_device, step_done
from torch import nn


def log_metrics(step: int, loss: torch.Tensor, history: list) -> None:
    history.append(loss.item())  # waits for the GPU
    if step % 50 == 0:
        print(f"step {step} loss {history[-1]:.4f}", flush=True)


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
a = p.parse_args()
model = nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 16)
history: list = []
for step in range(a.steps):
    loss = on_device(model(x).pow(2).mean())
    loss.backward()
    host_work(0.0005)
    kernel(0.010)
    opt.step()
    opt.zero_grad()
    step_done()
    log_metrics(step, loss, history)
