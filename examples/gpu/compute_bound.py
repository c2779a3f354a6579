"""Compute-bound (GPU): the data lives on the GPU and the model is wide float32 matmuls.

Expected verdict: compute-bound. Batches are drawn from a tensor already on the GPU, so there is no
input wait and no copy; the step is big matrix multiplies, which keep the GPU busy. gpubottle should
see kernels busy most of the step (profiler window, NVML utilization) and propose faster math:
bfloat16 autocast, TF32, torch.compile.

    gpubottle run examples/gpu/compute_bound.py
"""

import argparse
import time

import torch
from torch import nn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=120)
    a = p.parse_args()
    dev = torch.device("cuda")
    width = 8192
    data = torch.randn(4096, width, device=dev)
    target = torch.randint(0, 10, (4096,), device=dev)
    layers = [m for _ in range(6) for m in (nn.Linear(width, width), nn.GELU())]
    model = nn.Sequential(*layers, nn.Linear(width, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    t0 = time.perf_counter()
    for step in range(a.steps):
        if step == 10:  # warm-up done: the pace from here (`make gpu-check` compares it)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        idx = torch.randint(0, data.shape[0], (512,), device=dev)
        loss = nn.functional.cross_entropy(model(data[idx]), target[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 40 == 0:
            print(f"step {step}", flush=True)
    print(f"final loss {loss.item():.3f}")
    torch.cuda.synchronize()
    print(f"throughput: {(a.steps - 10) / (time.perf_counter() - t0):.3f} steps/s")


if __name__ == "__main__":
    main()
