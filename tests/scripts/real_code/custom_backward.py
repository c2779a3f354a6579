"""A clipped activation as a custom torch.autograd.Function whose backward goes row by row "for
clarity" (measured when written: 3.3 ms a step; 0.9 ms with the backward one masked multiply).
Options: --steps."""

import argparse

import torch
import torch.nn as nn


class ClipAct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1) * 1.5

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        out = torch.empty_like(g)
        for i in range(x.shape[0]):
            mask = (x[i] > -1) & (x[i] < 1)
            out[i] = g[i] * mask * 1.5
        return out


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 256), nn.Linear(256, 10)

    def forward(self, x):
        return self.b(ClipAct.apply(self.a(x)))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1500)
    args = p.parse_args()
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    X, Y = torch.randn(8192, 64), torch.randint(0, 10, (8192,))
    for _ in range(args.steps):
        idx = torch.randint(0, len(X), (128,))
        loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
