"""A model written as tensors, no nn.Module: its parameters made with nn.Parameter and given to the
optimizer as a list, its forward a function of the loop's. No module call holds that forward, so
its samples fall outside the model's phases. Options: --steps."""

import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=600)
args = p.parse_args()

torch.manual_seed(0)
W1 = torch.nn.Parameter(torch.randn(512, 1024) * 0.02)
b1 = torch.nn.Parameter(torch.zeros(1024))
W2 = (torch.randn(1024, 10) * 0.02).requires_grad_()
opt = torch.optim.Adam([W1, b1, W2], lr=1e-3)


def mlp(x):
    h = torch.relu(x @ W1 + b1)
    return h @ W2


for _step in range(args.steps):
    x = torch.randn(256, 512)
    y = torch.randint(0, 10, (256,))
    logits = torch.relu(x @ W1 + b1) @ W2 if _step % 2 else mlp(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
