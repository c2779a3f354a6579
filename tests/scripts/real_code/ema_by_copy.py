"""An EMA of the weights for evaluation, refreshed every step by deep-copying the model and blending
the old EMA into the copy (a shape seen in research code). gpubottle should say the time goes to
copying the model and offer one EMA updated in place (torch._foreach_lerp_ over lists kept once):
7.1 s -> 5.6 s here, the same EMA."""

import copy
import sys

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(12)], nn.Linear(256, 10))
ema = copy.deepcopy(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
decay = 0.999
X = torch.randn(4096, 256)
Y = torch.randint(0, 10, (4096,))
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 600


def update_ema(ema, model, step):
    d = min(decay, (1 + step) / (10 + step))
    new = copy.deepcopy(model)
    with torch.no_grad():
        for pe, pn in zip(ema.parameters(), new.parameters()):
            pn.mul_(1 - d).add_(pe, alpha=d)
    return new


for step in range(STEPS):
    idx = torch.randint(0, 4096, (64,))
    loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema = update_ema(ema, model, step)
print("loss", loss.item())
