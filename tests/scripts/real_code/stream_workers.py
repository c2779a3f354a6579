"""An IterableDataset of records read one at a time (2 ms each: a remote store, a decoder), given to
a DataLoader with two workers and nothing in __iter__ that splits the stream: torch runs the whole
__iter__ in each worker, so every record arrives twice an epoch (the script's own count says so)."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, IterableDataset


class RecordStream(IterableDataset):
    def __init__(self, records: int, read_ms: float) -> None:
        self.records, self.read_s = records, read_ms / 1000

    def read(self, i: int):
        time.sleep(self.read_s)
        return torch.full((64,), float(i % 5)), torch.tensor(i % 2)

    def __iter__(self):
        for i in range(self.records):
            yield self.read(i)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=2000)
    p.add_argument("--read-ms", type=float, default=2.0)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(RecordStream(a.records, a.read_ms), batch_size=32, num_workers=2)
    for epoch in range(a.epochs):
        seen = 0
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += len(x)
        print(f"epoch {epoch}: {seen} records")


if __name__ == "__main__":
    main()
