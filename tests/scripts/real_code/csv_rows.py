"""A CSV dataset whose __getitem__ opens the file and reads all of it to take its one line: every
sample pays for the whole file. Options: --rows (of the CSV), --steps."""
import argparse
import os
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.n = sum(1 for _ in f)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with open(self.path) as f:
            line = f.readlines()[i]
        vals = [float(v) for v in line.split(",")]
        return torch.tensor(vals[:-1]), int(vals[-1])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--steps", type=int, default=40)
    a = p.parse_args()
    path = os.path.join(tempfile.mkdtemp(), "rows.csv")
    g = torch.Generator().manual_seed(0)
    with open(path, "w") as f:
        for i in range(a.rows):
            f.write(",".join(f"{v:.4f}" for v in torch.randn(32, generator=g).tolist()) + f",{i % 3}\n")
    loader = DataLoader(Rows(path), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = torch.optim.Adam(model.parameters())
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == a.steps:
            break
    print("done")
