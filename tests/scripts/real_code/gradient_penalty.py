"""A WGAN-GP loop: the critic's gradient penalty differentiates its gradient again
(torch.autograd.grad(..., create_graph=True)), which a compiled critic refuses (torch 2.13: "does
not currently support double backward"). Options: --iters."""

import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=120)
args = p.parse_args()

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128))
D = nn.Sequential(nn.Linear(128, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))
opt_g = torch.optim.Adam(G.parameters(), 1e-4, betas=(0.0, 0.9))
opt_d = torch.optim.Adam(D.parameters(), 1e-4, betas=(0.0, 0.9))
data = torch.randn(20000, 128) * 0.5 + 1.0


def gradient_penalty(critic, real, fake):
    eps = torch.rand(real.size(0), 1)
    mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
    (g,) = torch.autograd.grad(critic(mix).sum(), mix, create_graph=True)
    return ((g.norm(2, dim=1) - 1) ** 2).mean()


for _it in range(args.iters):
    for _ in range(3):
        real = data[torch.randint(0, len(data), (256,))]
        fake = G(torch.randn(256, 64)).detach()
        d_loss = D(fake).mean() - D(real).mean() + 10 * gradient_penalty(D, real, fake)
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
    g_loss = -D(G(torch.randn(256, 64))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
print("done")
