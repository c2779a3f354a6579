"""Gradient clipping written as a loop over the parameters, one clip_grad_norm_ call per tensor
(162 of them): each call computes a norm and scales one tensor, and together they cost more than
the model. Measured when written: a 27 ms step, 9-11 ms with one call over all the parameters."""
import argparse

import torch


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    a = p.parse_args()
    layers = [torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64)) for _ in range(40)]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(a.steps):
        x = torch.randn(32, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for param in model.parameters():
            torch.nn.utils.clip_grad_norm_(param, max_norm=1.0)
        opt.step()


if __name__ == "__main__":
    main()
