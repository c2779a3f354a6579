"""Training on an in-memory set with an evaluation every N steps through a loader whose two workers
do not persist: each evaluation forks them again (iter()) and stops them at its end, a few tens of
ms for a pass that computes a few. Options: --steps, --eval-every, --val-persistent (the fix)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=2000)
p.add_argument("--eval-every", type=int, default=50)
p.add_argument("--val-persistent", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
train = TensorDataset(torch.randn(20000, 64), torch.randint(0, 10, (20000,)))
val = TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
train_loader = DataLoader(train, batch_size=64, shuffle=True)
val_loader = DataLoader(val, batch_size=128, num_workers=2, persistent_workers=a.val_persistent)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters())


def evaluate() -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += int((model(x).argmax(1) == y).sum())
    model.train()
    return correct / len(val)


step = 0
while step < a.steps:
    for x, y in train_loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % a.eval_every == 0:
            evaluate()
        if step >= a.steps:
            break
