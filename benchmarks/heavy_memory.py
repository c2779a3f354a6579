"""A training loop whose memory grows to several GB: it keeps every batch's logits (as a script
that collects predictions for a later metric does), about 120 MB a second. Prints its throughput
after the first 20 steps, as examples/compute_bound.py does (benchmarks/bench_heavy.py reads it).

    python benchmarks/heavy_memory.py [--seconds 20]
"""

import argparse
import time

import step_times
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=20.0)
a = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 4096))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
start = time.perf_counter()
steps, t20 = 0, None
while time.perf_counter() - start < a.seconds:
    logits = model(torch.randn(512, 256))
    loss = logits.logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    kept.append(logits.detach().clone())  # 8 MB a step, never released
    step_times.mark()
    steps += 1
    if steps == 20:
        t20 = time.perf_counter()
elapsed = time.perf_counter() - (t20 or start)
print(f"kept {sum(k.numel() * 4 for k in kept) / 2**30:.1f} GiB")
print(f"throughput: {(steps - 20) / elapsed:.3f} steps/s")
step_times.write()
