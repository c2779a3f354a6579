"""An Accelerate training script (accelerator.prepare of the model, optimizer and DataLoader), run
under torchrun with 2 ranks on CPU (gloo): what `accelerate launch --multi_gpu` runs underneath.
--slow-rank R: rank R's samples each take --sleep-ms to read."""

import argparse
import os

import torch
from accelerate import Accelerator
from ddp_train import Samples  # the same samples as the plain DDP job (this folder is on sys.path)
from torch.utils.data import DataLoader


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--slow-rank", type=int)
    a = p.parse_args()
    accelerator = Accelerator(cpu=True)
    rank = accelerator.process_index
    slow = a.slow_rank is None or a.slow_rank == rank
    torch.set_num_threads(1)
    loader = DataLoader(Samples(a.sleep_ms / 1000 if slow else 0.0), batch_size=8)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
        if step + 1 >= a.steps:
            break
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"{accelerator.num_processes} processes, {accelerator.distributed_type}", flush=True)


if __name__ == "__main__":
    main()
