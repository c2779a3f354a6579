"""A DCGAN-shaped loop whose discriminator step takes the generator's output undetached
(`bce(D(fake), zeros)`, `d_loss.backward(retain_graph=True)`): that backward runs on through G,
whose gradients opt_g.zero_grad() then clears before G's step. gpubottle called D's second call
on `fake` (for G's loss, after D's step) a repeated forward "nothing runs backward through" and
said to reuse the first call's output: wrong for a GAN (D changed in between, and G's loss is
backpropagated). It should say nothing of a repeat, and name fake.detach() in D's loss (measured:
300 steps 25.7-27.5 s, detached 19.5-21.4 s). Options: --steps."""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
a = ap.parse_args()
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(100, 256 * 4 * 4), nn.Unflatten(1, (256, 4, 4)),
                  nn.ConvTranspose2d(256, 128, 4, 2, 1), nn.BatchNorm2d(128), nn.ReLU(),
                  nn.ConvTranspose2d(128, 64, 4, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                  nn.ConvTranspose2d(64, 3, 4, 2, 1), nn.Tanh())
D = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.LeakyReLU(0.2),
                  nn.Conv2d(32, 64, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(64 * 8 * 8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
real_data = torch.rand(4096, 3, 32, 32) * 2 - 1
for _step in range(a.steps):
    real = real_data[torch.randint(0, 4096, (64,))]
    z = torch.randn(64, 100)
    fake = G(z)
    # discriminator
    d_loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake), torch.zeros(64, 1))
    opt_d.zero_grad()
    d_loss.backward(retain_graph=True)
    opt_d.step()
    # generator
    g_loss = bce(D(fake), torch.ones(64, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
print(f"d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")
