"""The host runs ahead of the GPU and syncs rarely: each step queues 10 ms of GPU work in 1 ms of
host time, and only every 50th step reads the loss (.item()), which waits for the whole backlog.
Device truth: 10 ms a step, the GPU never idle; compute-bound. --warmup-ms: the first three steps'
extra time (the first's on the host: cudnn.benchmark trying its algorithms, cuBLAS creating its
handles; the next two's on the device)."""

import argparse
import time

import torch
from common import host_work, kernel, on_device, step_done
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--gpu-ms", type=float, default=10.0)
p.add_argument("--item-every", type=int, default=50)
p.add_argument("--warmup-ms", type=float, default=0.0)
a = p.parse_args()
model = nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 16)
for step in range(a.steps):
    loss = on_device(model(x).pow(2).mean())
    loss.backward()
    host_work(0.001)
    kernel(a.gpu_ms / 1000)  # forward and backward on the GPU
    if step == 0 and a.warmup_ms:
        time.sleep(a.warmup_ms / 1000)  # cuDNN's algorithm search, cuBLAS's handles: the host waits
    elif step < 3 and a.warmup_ms:
        kernel(a.warmup_ms / 1000)  # the next steps' first kernels of each kind: once
    opt.step()
    opt.zero_grad()
    step_done()
    if step % a.item_every == a.item_every - 1:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
