"""A small denoising diffusion model on 2-D points whose sinusoidal timestep embedding is written
with Python's math, a value at a time: `for ti in t.tolist(): for i in range(half):
row.append(math.sin(ti * freq)); row.append(math.cos(ti * freq))`, then torch.tensor(rows)
(256 timesteps x 128 values a step). gpubottle read compute-bound with torch.compile first, the
embedding unnamed (no op in it, no loop over a tensor's rows). It should name the loop with tensor
ops on whole ranges: the script faster by its share, the same values. Options: --steps."""
import argparse
import math

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
a = ap.parse_args()
torch.manual_seed(0)
T, DIM = 1000, 128
alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, T), 0)


def timestep_embedding(t, dim=DIM):
    rows = []
    for ti in t.tolist():
        row = []
        for i in range(dim // 2):
            freq = math.exp(-math.log(10000) * i / (dim // 2))
            row.append(math.sin(ti * freq))
            row.append(math.cos(ti * freq))
        rows.append(row)
    return torch.tensor(rows)


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_proj = nn.Sequential(nn.Linear(DIM, 256), nn.SiLU())
        self.net = nn.Sequential(nn.Linear(2 + 256, 256), nn.SiLU(), nn.Linear(256, 256), nn.SiLU(),
                                 nn.Linear(256, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, self.t_proj(timestep_embedding(t))], 1))


data = torch.randn(20000, 2) * torch.tensor([1.0, 0.3])
model = Denoiser()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(a.steps):
    x0 = data[torch.randint(0, len(data), (256,))]
    t = torch.randint(0, T, (256,))
    noise = torch.randn_like(x0)
    ab = alpha_bar[t].unsqueeze(1)
    loss = nn.functional.mse_loss(model(ab.sqrt() * x0 + (1 - ab).sqrt() * noise, t), noise)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
