"""The dataset parses every record of its source in __init__ (text records, one by one) before the
first batch: a long start-up, then a short, healthy training loop; a quick evaluation pass at the
end, which is fine. Parsing once and caching the tensors, or parsing lazily in __getitem__, are
the fixes. Options: --records, --steps."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class ParsedRecords(Dataset):
    def __init__(self, n: int) -> None:
        self.rows = []
        for i in range(n):  # every record parsed up front, in Python
            text = ",".join(str((i * 31 + k) % 997 / 997) for k in range(32))
            self.rows.append([float(v) for v in text.split(",")])
        self.x = torch.tensor(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        return self.x[i], i % 4


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=60000)
    p.add_argument("--steps", type=int, default=60)
    a = p.parse_args()
    start = time.perf_counter()
    data = ParsedRecords(a.records)
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(loader, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= a.steps:
            break
    model.eval()
    with torch.no_grad():  # a quick evaluation pass on in-memory data: fine, not a cost to name
        val = DataLoader(torch.utils.data.TensorDataset(data.x[:512], torch.zeros(512).long()),
                         batch_size=128)
        hits = sum(int((model(x).argmax(1) == y).sum()) for x, y in val)
    print(f"accuracy {hits / 512:.2f}; elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
