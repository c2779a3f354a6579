"""A config-driven app in Hydra's layout: conf/config.yaml, and the `data` group's choice in
conf/data/slow_disk.yaml, composed with OmegaConf and overridable from the command line
(data.num_workers=4). Each sample waits on a slow read. The worker fix is an override, and
--patch edits the YAML line the value came from."""
import os
import time

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader, Dataset

HERE = os.path.dirname(os.path.abspath(__file__))


class SlowReads(Dataset):
    def __len__(self) -> int:
        return 400

    def __getitem__(self, i: int):
        time.sleep(0.004)  # a read from slow storage
        return torch.randn(64), i % 2


def compose():
    cfg = OmegaConf.load(os.path.join(HERE, "conf", "config.yaml"))
    cfg.data = OmegaConf.load(os.path.join(HERE, "conf", "data", "slow_disk.yaml"))
    return OmegaConf.merge(cfg, OmegaConf.from_cli())


def main() -> None:
    cfg = compose()
    model = torch.nn.Linear(cfg.model.width, 2)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr)
    loader = DataLoader(SlowReads(), batch_size=cfg.data.batch_size, num_workers=cfg.data.num_workers,
                        persistent_workers=cfg.data.num_workers > 0)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"num_workers={loader.num_workers}")


if __name__ == "__main__":
    main()
