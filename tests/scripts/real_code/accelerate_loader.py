"""A single-process Hugging Face Accelerate loop: the DataLoader is written here with
num_workers=0, then accelerator.prepare() rebuilds it (a DataLoaderShard) and the loop iterates the
rebuilt one. Each sample waits on a slow read. The worker fix belongs at the DataLoader(...) line
below, not at prepare(), which has no such argument. Options: --steps."""
import argparse
import time

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class SlowReads(Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int):
        time.sleep(0.0015)  # the read
        return torch.full((32,), float(i % 5)), i % 4


p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
a = p.parse_args()
accelerator = Accelerator(cpu=True)
torch.set_num_threads(1)
loader = DataLoader(SlowReads(), batch_size=16, shuffle=True, num_workers=0)
model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt, loader = accelerator.prepare(model, opt, loader)
for step, (x, y) in enumerate(loader, 1):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    accelerator.backward(loss)
    opt.step()
    if step == a.steps:
        break
