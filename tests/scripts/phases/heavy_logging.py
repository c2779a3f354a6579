"""After every step the loop logs: it formats every parameter's statistics into a dict, serialises
it to JSON and appends it to a log file. The logging, not the model, sets the pace; logging every
--log-every steps is the fix. Options: --steps, --log-every, --log."""
import argparse
import json
import os
import tempfile
import time

import torch
from torch import nn


def log_metrics(model: nn.Module, step: int, loss: float, fh) -> None:
    record = {"step": step, "loss": loss}
    for name, prm in model.named_parameters():
        values = prm.detach().flatten().tolist()  # every value through Python: the cost
        record[name] = {"mean": sum(values) / len(values), "max": max(values), "min": min(values),
                        "hist": sorted(values)[:: max(1, len(values) // 16)]}
    fh.write(json.dumps(record) + "\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--log-every", type=int, default=1)
    p.add_argument("--log", default=None)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 128), torch.randn(64, 64)
    path = a.log or os.path.join(tempfile.mkdtemp(), "metrics.jsonl")
    start = time.perf_counter()
    with open(path, "w") as fh:
        for step in range(1, a.steps + 1):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % a.log_every == 0:
                log_metrics(model, step, float(loss), fh)
    print(f"elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
