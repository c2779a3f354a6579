"""Two workers whose collate_fn builds each batch in pure Python (per-sample lists, per-element
math), then a small model: the CPU the run has is the limit (preprocessing-bound), alone and beside
two busy programs (issue 24.5: it once came out compute-bound there)."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, batches: int) -> None:
        self.n = 64 * batches

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return [float((i * 7 + k) % 13) for k in range(128)], i % 2


def collate(samples):
    xs, ys = [], []
    for row, y in samples:
        m = sum(row) / len(row)
        xs.append([(v - m) / 13.0 for v in row])
        ys.append(y)
    return torch.tensor(xs), torch.tensor(ys)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batches", type=int, default=1000)
    a = p.parse_args()
    loader = DataLoader(Rows(a.batches), batch_size=64, num_workers=a.workers, collate_fn=collate,
                        persistent_workers=True)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t = time.perf_counter()
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"elapsed {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
