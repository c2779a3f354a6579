"""An IterableDataset that streams records from slow storage (a sleep per record stands in for the
read), read with num_workers=0. More workers hide the reads only if each worker takes its own share
of the stream: unsplit, every worker replays it whole. Options: --workers N, --shard (split the
stream with get_worker_info()), --records N. Prints how many records the loop trained on."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class RecordStream(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def mine(self, i: int) -> bool:
        return True

    def __iter__(self):
        for i in range(self.n):
            if self.mine(i):
                time.sleep(0.003)  # the read
                yield torch.full((16,), float(i % 5)), i


class ShardedRecordStream(RecordStream):
    """The fix: each worker reads only its own share of the stream."""

    def mine(self, i: int) -> bool:
        info = get_worker_info()
        return info is None or i % info.num_workers == info.id


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--shard", action="store_true")
    p.add_argument("--records", type=int, default=960)
    a = p.parse_args()
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    stream = (ShardedRecordStream if a.shard else RecordStream)(a.records)
    loader = DataLoader(stream, batch_size=16, num_workers=a.workers)
    seen = 0
    start = time.perf_counter()
    for x, ids in loader:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen += len(ids)
    print(f"records trained on: {seen} of {a.records}; elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
