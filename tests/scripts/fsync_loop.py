"""A loop that appends each step's metrics to a file and fsyncs it (so a crash loses nothing): the
loop blocks in os.fsync about an eighth of each step, and a sampler that waits for a free core on a busy
machine samples those moments. It times its own fsync calls and writes, half-way, the niceness of
each py-spy thread it finds sampling it or its loader worker. Options: --steps, --out."""
import argparse
import json
import os
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=3000)
p.add_argument("--out", required=True)
a = p.parse_args()
torch.manual_seed(0)
X = torch.randn(50000, 128)
Y = X[:, :1] * 2
loader = DataLoader(TensorDataset(X, Y), batch_size=128, shuffle=True, num_workers=1,
                    persistent_workers=True)
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
log = open(os.path.join(tempfile.mkdtemp(), "metrics.jsonl"), "w")  # noqa: SIM115 (the run's log)


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def spies() -> list[dict[str, object]]:
    """Each py-spy process on the machine: the pid it samples and its threads' niceness."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = _read(f"/proc/{pid}/cmdline").split(b"\0")
            if not cmd or not cmd[0].endswith(b"py-spy") or b"--pid" not in cmd:
                continue
            nices = [int(_read(f"/proc/{pid}/task/{t}/stat").rsplit(b")", 1)[1].split()[16])
                     for t in os.listdir(f"/proc/{pid}/task")]
        except (OSError, IndexError, ValueError):
            continue
        found.append({"target": int(cmd[cmd.index(b"--pid") + 1]), "nices": nices})
    return found


fsync_s, seen, step, t0 = 0.0, None, 0, time.perf_counter()
while step < a.steps:
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.write(json.dumps({"step": step, "loss": loss.item(), "time": time.time()}) + "\n")
        log.flush()
        t = time.perf_counter()
        os.fsync(log.fileno())
        fsync_s += time.perf_counter() - t
        step += 1
        if step == a.steps // 2:
            kids = _read(f"/proc/{os.getpid()}/task/{os.getpid()}/children").split()
            seen = {"main": os.getpid(), "children": [int(k) for k in kids], "spies": spies(),
                    "own_nice": os.getpriority(os.PRIO_PROCESS, 0)}
        if step >= a.steps:
            break
loop_s = time.perf_counter() - t0
with open(a.out, "w") as fh:
    json.dump({"fsync_share": fsync_s / loop_s, **(seen or {})}, fh)
print(f"{step} steps, {fsync_s / loop_s:.0%} of the loop in os.fsync")
