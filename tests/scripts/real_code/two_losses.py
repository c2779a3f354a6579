"""Multi-task training: a shared trunk, two heads, and each head's loss backpropagated on its own,
the first with retain_graph=True so the second can run through the same graph. Backward then runs
through the trunk twice a step, where one backward of the losses' sum gives the same gradients.
Options: --steps, --summed (the fix: one backward of the sum)."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=150)
p.add_argument("--summed", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                      nn.Linear(1024, 512), nn.ReLU())
head_a = nn.Linear(512, 10)
head_b = nn.Linear(512, 1)
opt = torch.optim.SGD([*trunk.parameters(), *head_a.parameters(), *head_b.parameters()], lr=0.01)
X, ya, yb = torch.randn(4096, 256), torch.randint(0, 10, (4096,)), torch.randn(4096, 1)
step = 0
while step < a.steps:
    for i in range(0, 4096, 128):
        feats = trunk(X[i:i + 128])
        loss_a = nn.functional.cross_entropy(head_a(feats), ya[i:i + 128])
        loss_b = nn.functional.mse_loss(head_b(feats), yb[i:i + 128])
        opt.zero_grad()
        if a.summed:
            (loss_a + loss_b).backward()
        else:
            loss_a.backward(retain_graph=True)
            loss_b.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
