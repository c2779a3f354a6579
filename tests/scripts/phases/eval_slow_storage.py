"""Training reads in-memory tensors; every --eval-every steps the model is evaluated on a validation
set read from slow storage (a sleep per sample stands in for the read), with num_workers=0. The
evaluation loader, not training, takes most of the run: workers on the *validation* loader are the
fix, workers on the training loader change nothing. Options: --steps, --eval-every,
--val-workers, --val-persistent, --val-samples, --read-ms."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset


class SlowStore(Dataset):
    def __init__(self, n: int, read_s: float) -> None:
        self.n, self.read_s = n, read_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        time.sleep(self.read_s)  # a read from slow storage: waiting, not computing
        return torch.full((64,), float(i % 7)), i % 4


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(1) == y).sum())
    model.train()
    return correct / len(loader.dataset)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--val-workers", type=int, default=0)
    p.add_argument("--val-persistent", action="store_true")
    p.add_argument("--val-samples", type=int, default=240)
    p.add_argument("--read-ms", type=float, default=3.0)
    a = p.parse_args()
    torch.manual_seed(0)
    train = DataLoader(TensorDataset(torch.randn(4096, 64), torch.randint(0, 4, (4096,))),
                       batch_size=32, shuffle=True)
    val = DataLoader(SlowStore(a.val_samples, a.read_ms / 1e3), batch_size=32,
                     num_workers=a.val_workers, persistent_workers=a.val_persistent)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = time.perf_counter()
    step = 0
    while step < a.steps:
        for x, y in train:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % a.eval_every == 0:
                print(f"step {step}: accuracy {evaluate(model, val):.2f}", flush=True)
            if step >= a.steps:
                break
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
