"""An OmegaConf config with command-line overrides (`data.num_workers=4`), as Hydra-style scripts
take them: the worker count reaches DataLoader as cfg.data.num_workers. Each sample waits on a slow
read. The fix is an override to pass, not a literal at the call."""
import time

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader, Dataset


class SlowReads(Dataset):
    def __len__(self) -> int:
        return 480

    def __getitem__(self, i: int):
        time.sleep(0.004)  # a read from slow storage
        return torch.randn(32), i % 2


def main() -> None:
    defaults = OmegaConf.create({"data": {"num_workers": 0, "batch_size": 16}})
    cfg = OmegaConf.merge(defaults, OmegaConf.from_cli())
    model = torch.nn.Linear(32, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(SlowReads(), batch_size=cfg.data.batch_size, num_workers=cfg.data.num_workers,
                        persistent_workers=cfg.data.num_workers > 0)
    start = time.perf_counter()
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"num_workers={loader.num_workers} elapsed: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
