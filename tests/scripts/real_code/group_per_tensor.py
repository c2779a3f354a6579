"""Layer-wise learning-rate decay written as one AdamW parameter group per parameter tensor (146
groups of 24 residual MLP blocks), on a CPU: the optimizer's per-tensor loop is most of the step,
and fused or foreach batch one group's tensors at a time. Options: --steps, --fused, --foreach,
--per-block (one group per block and kind of tensor, the same learning rates by depth)."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1500)
p.add_argument("--fused", action="store_true")
p.add_argument("--foreach", action="store_true")
p.add_argument("--per-block", action="store_true")
a = p.parse_args()
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.ln(x))))


model = nn.Sequential(*[Block(64) for _ in range(24)], nn.Linear(64, 10))
groups = []
if a.per_block:
    for depth, mod in enumerate(model):
        scale = 0.9 ** (len(model) - depth)
        ps = list(mod.parameters())
        groups.append({"params": [q for q in ps if q.ndim > 1], "lr": 1e-3 * scale, "weight_decay": 0.05})
        groups.append({"params": [q for q in ps if q.ndim == 1], "lr": 1e-3 * scale, "weight_decay": 0.0})
else:
    params = list(model.parameters())
    for depth, q in enumerate(params):
        scale = 0.9 ** (len(params) - depth)
        groups.append({"params": [q], "lr": 1e-3 * scale, "weight_decay": 0.0 if q.ndim == 1 else 0.05})
kw = {"fused": True} if a.fused else {"foreach": True} if a.foreach else {}
opt = torch.optim.AdamW(groups, **kw)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
for step in range(a.steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 300 == 0:
        print(step, round(loss.item(), 4))
