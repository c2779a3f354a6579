"""Two ranks training on the GPU(s) this machine has (both on one GPU when it has one): DDP over
NCCL when there is a GPU per rank, else gloo (NCCL refuses two ranks on one device). Rank 1 reads
its samples slowly: it sets the pace, and the report should say so.

Expected verdict: data-starved (rank 1's), with a straggler finding naming rank 1.

    gpubottle run --nproc-per-node 2 examples/gpu/two_ranks.py
"""

import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):
        if self.sleep_s:
            time.sleep(self.sleep_s)  # a slow read
        return torch.randn(1024), torch.randn(1024)


def main() -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    gpus = torch.cuda.device_count()
    backend = "nccl" if gpus >= world else "gloo"
    dist.init_process_group(backend)
    dev = torch.device("cuda", rank % max(1, gpus))
    torch.cuda.set_device(dev)
    data = DataLoader(Samples(0.004 if rank == 1 else 0.0), batch_size=32, num_workers=1)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev),
        device_ids=[dev.index])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(data):
        loss = torch.nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 80:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
