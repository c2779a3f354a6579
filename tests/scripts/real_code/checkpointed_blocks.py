"""A residual MLP whose config turns on activation checkpointing for every block, as large-model
recipes do, on a model whose activations fit many times over: each backward runs the blocks'
forwards again. Measured plain on the test machine: 42.3 ms a step checkpointed, 33.4 ms without
(width 256, batch 128).

    python checkpointed_blocks.py [--steps N] [--width W] [--batch B]"""
import argparse
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class Config:
    width: int = 256
    depth: int = 6
    classes: int = 10
    use_checkpoint: bool = True  # trade compute for activation memory


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.width)
        self.ff = nn.Sequential(nn.Linear(cfg.width, 4 * cfg.width), nn.GELU(),
                                nn.Linear(4 * cfg.width, cfg.width))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Net(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.head = nn.Linear(cfg.width, cfg.classes)

    def forward(self, x):
        for blk in self.blocks:
            if self.cfg.use_checkpoint and self.training:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(x)


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--width", type=int, default=256)
p.add_argument("--batch", type=int, default=128)
a = p.parse_args()
torch.manual_seed(0)
cfg = Config(width=a.width)
data = TensorDataset(torch.randn(a.batch * 50, cfg.width), torch.randint(0, cfg.classes, (a.batch * 50,)))
loader = DataLoader(data, batch_size=a.batch, shuffle=True)
model = Net(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = 0
while step < a.steps:
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
print(f"{step} steps, loss {loss.item():.3f}")
