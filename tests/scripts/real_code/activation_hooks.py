"""Activation statistics gathered by a forward hook on every layer at every step (a debugging aid
left on): .numpy(), mean, std and a histogram of each output. Measured when written: 8.0-8.9 ms a
step, 4.0 ms without the hooks (hooks that return at once cost nothing measurable).
Options: --steps."""

import argparse
from collections import defaultdict

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
args = p.parse_args()

model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(256, 256), nn.ReLU())], nn.Linear(256, 10))
stats = defaultdict(list)


def record_activations(name):
    def hook(module, inputs, output):
        a = output.detach().cpu().numpy()
        hist, _ = np.histogram(a, bins=50)
        stats[name].append((float(a.mean()), float(a.std()), hist))
    return hook


for name, module in model.named_modules():
    if isinstance(module, (nn.Linear, nn.ReLU)):
        module.register_forward_hook(record_activations(name))

opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(128, 256)
y = torch.randint(0, 10, (128,))
for step in range(args.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.3f}")
print("done", len(stats))
