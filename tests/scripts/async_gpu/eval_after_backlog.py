"""The host runs ahead of the GPU (1 ms of host time queues 10 ms of GPU work a step, no sync), and
every --eval-every steps an evaluation without a DataLoader (model.eval() ... model.train()) runs
--eval-batches batches of 2 ms of GPU work and reads the loss (.item()): the read waits first for
all the training's queued work. Device truth: the evaluation's own work is its batches' 2 ms each;
the rest of its host span is the training's backlog draining."""

import argparse

import torch
from common import host_work, kernel, on_device, step_done
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--eval-every", type=int, default=40)
p.add_argument("--eval-batches", type=int, default=10)
a = p.parse_args()
model = nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 16)


def evaluate() -> float:
    model.eval()
    total = on_device(torch.zeros(()))
    with torch.no_grad():
        for _ in range(a.eval_batches):
            host_work(0.0002)
            kernel(0.002)
            total = on_device(total + model(x).pow(2).mean())
    value = total.item()  # waits for everything queued: the training's backlog first
    model.train()
    return value


for step in range(1, a.steps + 1):
    loss = on_device(model(x).pow(2).mean())
    loss.backward()
    host_work(0.001)
    kernel(0.010)
    opt.step()
    opt.zero_grad()
    step_done()
    if step % a.eval_every == 0:
        print(f"step {step}: eval {evaluate():.4f}", flush=True)
