"""A loop that forces a full garbage collection after every step (and empties the CUDA cache, a
no-op without a GPU), as notebooks do "to free memory": gc.collect() walks every object torch and
the script hold, ~130 ms a call here, most of each step. Options: --steps."""
import argparse
import gc

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=100)
a = p.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8192, 64), torch.randint(0, 4, (8192,))), batch_size=64)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    del loss
    gc.collect()
    torch.cuda.empty_cache()
    if step + 1 == a.steps:
        break
