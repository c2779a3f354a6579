"""Loops whose host clock misleads on a real GPU, each timing itself on the device (its own CUDA
events at every step's end: the truth `make gpu-check` holds gpubottle's numbers against).

    python examples/gpu/shapes.py --shape host-ahead --item-every 50 --truth truth.json
    python examples/gpu/shapes.py --shape data --data-ratio 1.2 [--num-workers N]
    python examples/gpu/shapes.py --shape resident      # a GPU dataset read with int() in __getitem__
    python examples/gpu/shapes.py --shape copies        # pageable .to(), pinned copy, .item(), sync
    python examples/gpu/shapes.py --shape launch        # ~1 ms of small kernels a step

host-ahead: wide float32 matmuls queued far faster than they run; .item() every N steps drains the
backlog (every step with --item-every 1). data: batches made in __getitem__ with CPU time set to
--data-ratio times the GPU's own step (measured first), no per-step sync. The truth file holds each
step's device time and the run's throughput after --skip steps.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

DEV = torch.device("cuda")


def spin(seconds: float) -> None:
    """Busy CPU time (wall clock: thread_time ticked coarsely on a GPU VM)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Clock:
    """The script's own device clock: an event at each step's end, read once at the end."""

    def __init__(self) -> None:
        self.events: list[torch.cuda.Event] = []
        self.host: list[float] = []

    def step(self) -> None:
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        self.events.append(ev)
        self.host.append(time.perf_counter())

    def write(self, path: str | None, skip: int) -> None:
        torch.cuda.synchronize()
        ev = self.events
        steps = [ev[i - 1].elapsed_time(ev[i]) / 1000 for i in range(1, len(ev))]
        kept = steps[skip:]
        rate = len(kept) / sum(kept) if kept and sum(kept) > 0 else None
        print(f"throughput: {rate:.3f} steps/s" if rate else "throughput: none", flush=True)
        if path:
            with open(path, "w") as fh:
                json.dump({"step_s": steps, "skip": skip, "throughput": rate}, fh)


def mlp(width: int, depth: int) -> nn.Module:
    layers = [m for _ in range(depth) for m in (nn.Linear(width, width), nn.GELU())]
    return nn.Sequential(*layers, nn.Linear(width, 10)).to(DEV)


def host_ahead(a: argparse.Namespace, clock: Clock) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    model = mlp(4096, 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(2048, 4096, device=DEV)
    y = torch.randint(0, 10, (2048,), device=DEV)
    for step in range(a.steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.step()
        if step % a.item_every == a.item_every - 1:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


class Made(Dataset):
    def __init__(self, cpu_s: float, n: int = 1 << 20) -> None:
        self.cpu_s, self.n = cpu_s, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        spin(self.cpu_s)  # decoding and augmenting one sample
        return torch.full((1024,), float(i % 7)), i % 10


def data(a: argparse.Namespace, clock: Clock) -> None:
    model = mlp(4096, 4)
    batch = 512
    x = torch.randn(batch, 1024, device=DEV)
    head = nn.Linear(1024, 4096).to(DEV)
    # The GPU's own step, to set the batch's CPU time against it: forward passes under no_grad
    # (a step is about three), so that no backward() or optimizer step makes these the training's
    # steps (under gpubottle the profiler window would then land in this timing and inflate it).
    with torch.no_grad():
        for _ in range(5):
            model(head(x))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            model(head(x))
        torch.cuda.synchronize()
    gpu_s = 3 * (time.perf_counter() - t0) / 10
    per_sample = a.data_ratio * gpu_s / batch
    print(f"gpu step {gpu_s * 1e3:.2f} ms; batch CPU {a.data_ratio * gpu_s * 1e3:.2f} ms", flush=True)
    loader = DataLoader(Made(per_sample), batch_size=batch, num_workers=a.num_workers,
                        pin_memory=True, persistent_workers=a.num_workers > 0)
    opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    for step, (xb, yb) in enumerate(loader):
        if step == a.steps:
            break
        xb, yb = xb.to(DEV, non_blocking=True), yb.to(DEV, non_blocking=True)
        loss = nn.functional.cross_entropy(model(head(xb)), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.step()


class OnGpu(Dataset):
    def __init__(self, n: int) -> None:
        self.x = torch.randn(n, 1024, device=DEV)
        self.y = torch.randint(0, 10, (n,), device=DEV)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        return self.x[i], int(self.y[i])  # reading a GPU element waits for the queued work


def resident(a: argparse.Namespace, clock: Clock) -> None:
    model = mlp(4096, 4)
    head = nn.Linear(1024, 4096).to(DEV)
    opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    loader = DataLoader(OnGpu(65536), batch_size=512, shuffle=True)
    for step, (xb, yb) in enumerate(loader):
        if step == a.steps:
            break
        loss = nn.functional.cross_entropy(model(head(xb)), yb.to(DEV))
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.step()


def copies(a: argparse.Namespace, clock: Clock) -> None:
    model = mlp(2048, 2)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    pageable = torch.randn(4096, 2048)
    pinned = torch.randn(4096, 2048).pin_memory()
    for _step in range(a.steps):
        xa = pageable.to(DEV)  # pageable: a synchronous copy
        xb = pinned.to(DEV, non_blocking=True)
        loss = nn.functional.cross_entropy(model(xa + xb), torch.zeros(4096, dtype=torch.long, device=DEV))
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.step()
        _ = loss.item()
        torch.cuda.synchronize()


def launch(a: argparse.Namespace, clock: Clock) -> None:
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(8)]).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)  # a per-tensor loop of small kernels
    x = torch.randn(32, 64, device=DEV)
    t0 = time.perf_counter()
    for step in range(a.steps):
        if step == a.skip:
            t0 = time.perf_counter()
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.step()
    torch.cuda.synchronize()
    print(f"host throughput: {(a.steps - a.skip) / (time.perf_counter() - t0):.3f} steps/s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", required=True, choices=["host-ahead", "data", "resident", "copies", "launch"])
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--skip", type=int, default=20, help="steps left out of the truth's throughput")
    p.add_argument("--item-every", type=int, default=50)
    p.add_argument("--data-ratio", type=float, default=1.2)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--truth")
    a = p.parse_args()
    clock = Clock()
    {"host-ahead": host_ahead, "data": data, "resident": resident, "copies": copies,
     "launch": launch}[a.shape](a, clock)
    clock.write(a.truth, a.skip)


if __name__ == "__main__":
    main()
