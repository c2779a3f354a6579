"""A tiny DDP job on the gloo backend (CPU): under torchrun, or with --spawn N through mp.spawn.

--sleep-ms S: each sample takes S ms to read (data-starved); --slow-rank R: only rank R's samples
do (a straggler); --fail-rank R: rank R raises at step --fail-step (5); --rank R --world N: the
rank and world size from the command line (nothing in the environment but MASTER_ADDR/PORT).
"""

import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i):
        if self.sleep_s:
            time.sleep(self.sleep_s)  # a slow read
        return torch.full((32,), float(i % 7)), torch.zeros(4)


def train(rank: int, world: int, args: argparse.Namespace) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    slow = args.slow_rank is None or args.slow_rank == rank
    data = DataLoader(Samples(args.sleep_ms / 1000 if slow else 0.0), batch_size=8,
                      num_workers=args.workers)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(),
                                                        torch.nn.Linear(256, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(data):
        if args.fail_rank == rank and step == args.fail_step:
            raise ValueError(f"bad batch on rank {rank}")
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        if args.work_ms and (args.slow_rank is None or args.slow_rank == rank):
            end = time.perf_counter() + args.work_ms / 1000
            while time.perf_counter() < end:  # extra work on this rank's CPU
                pass
        opt.step()
        if step + 1 >= args.steps:
            break
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--work-ms", type=float, default=0.0)
    p.add_argument("--slow-rank", type=int)
    p.add_argument("--fail-rank", type=int)
    p.add_argument("--fail-step", type=int, default=5)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--rank", type=int)
    p.add_argument("--world", type=int)
    args = p.parse_args()
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        mp.spawn(train, args=(args.spawn, args), nprocs=args.spawn)
    elif args.rank is not None:
        train(args.rank, args.world, args)
    else:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)


if __name__ == "__main__":
    main()
