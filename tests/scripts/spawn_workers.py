"""DataLoader workers started with spawn, dataset class defined in this very script."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.tensor([float(i * i)])


if __name__ == "__main__":
    loader = DataLoader(Squares(), batch_size=8, num_workers=2, multiprocessing_context="spawn")
    total = 0.0
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        total += float(x.sum())
    print(f"total={total:.0f}")
