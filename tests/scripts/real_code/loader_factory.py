"""A project's loader factory: the DataLoader is built in a helper from a config dict the module
writes (read with cfg.get): the fix belongs in the dict, not at the helper's DataLoader(...) line."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Remote(Dataset):
    def __len__(self):
        return 50_000

    def __getitem__(self, i):
        time.sleep(0.002)  # (a read that dominates the step on a slow, loaded hour too)
        return torch.randn(32), i % 4


def build_loader(dataset, cfg):
    return DataLoader(dataset, batch_size=cfg["batch_size"], shuffle=True,
                      num_workers=cfg.get("num_workers", 0))


CONFIG = {"batch_size": 32, "num_workers": 0, "lr": 1e-3}
STEPS = 40


def main():
    loader = build_loader(Remote(), CONFIG)
    model = nn.Linear(32, 4)
    opt = torch.optim.SGD(model.parameters(), lr=CONFIG["lr"])
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == STEPS:
            break


if __name__ == "__main__":
    main()
