"""Record the small torch.profiler traces the trace tests read (torch 2.13, CPU): rerun with
`.venv/bin/python tests/traces/record.py` after a torch upgrade and commit the .json.gz files.

- starved_single: a DataLoader with num_workers=0 whose samples wait 4 ms on "storage" each;
- starved_workers: the same samples read by 2 workers, still slower than the step;
- fed: batches already in memory and a model that computes, with record_function ranges and
  profile_memory (the loop does not wait);
- unscheduled_starved: starved_single's loader profiled without a schedule (prof.step() never
  called: no ProfilerStep# in the trace, only torch.optim's own Optimizer.step# annotations).

`record.py NAME...` records only those.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset, TensorDataset

HERE = os.path.dirname(os.path.abspath(__file__))


class SlowSamples(Dataset):
    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, i: int):
        time.sleep(0.004)  # storage latency
        return torch.full((64,), float(i % 7)), i % 4


def _record(name: str, loader, model: nn.Module, memory: bool = False) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=5),
                     on_trace_ready=lambda p: p.export_chrome_trace(path), profile_memory=memory,
                     record_shapes=False) as prof:
            for step, (x, y) in enumerate(loader):
                with record_function("forward_and_loss"):
                    loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                with record_function("optimizer"):
                    opt.step()
                prof.step()
                if step >= 7:
                    break
        with open(path, "rb") as src, gzip.open(os.path.join(HERE, f"{name}.pt.trace.json.gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)


def _record_unscheduled(name: str, loader, model: nn.Module, steps: int = 8) -> None:
    """A profile around a few steps, as a first try at torch.profiler often is: no schedule."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for step, (x, y) in enumerate(loader):
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step >= steps - 1:
                    break
        prof.export_chrome_trace(path)
        with open(path, "rb") as src, gzip.open(os.path.join(HERE, f"{name}.pt.trace.json.gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)


def main() -> None:
    only = set(sys.argv[1:])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    small = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))
    if not only or "starved_single" in only:
        _record("starved_single", DataLoader(SlowSamples(), batch_size=16, num_workers=0), small)
    if not only or "starved_workers" in only:
        _record("starved_workers", DataLoader(SlowSamples(), batch_size=16, num_workers=2), small)
    if not only or "fed" in only:
        big = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                            nn.Linear(1024, 4))
        data = TensorDataset(torch.randn(4096, 512), torch.randint(0, 4, (4096,)))
        _record("fed", DataLoader(data, batch_size=256, num_workers=0), big, memory=True)
    if not only or "unscheduled_starved" in only:
        _record_unscheduled("unscheduled_starved", DataLoader(SlowSamples(), batch_size=16, num_workers=0),
                            small)
    print(f"recorded with torch {torch.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
