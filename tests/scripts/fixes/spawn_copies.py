"""A dataset held as one large numpy array in memory, read by DataLoader workers started with
spawn (macOS's and Windows' default): each worker unpickles its own copy of the array. Options:
--mb (array size), --workers, --start (spawn | fork), --mmap (the fix: a memory-mapped file every
worker shares)."""
import argparse
import os
import tempfile
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, data) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int):
        time.sleep(0.001)
        return torch.from_numpy(np.array(self.data[i], dtype=np.float32))


class MappedRows(Rows):
    """The fix: the file's path travels to the workers, each maps the file itself (the OS's page
    cache is shared; an array passed in, even a memmap, is pickled whole into every worker)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.n = len(np.load(path, mmap_mode="r"))
        self._data = None

    def __len__(self) -> int:
        return self.n

    @property
    def data(self):  # opened on first use, in the process that reads it
        if self._data is None:
            self._data = np.load(self.path, mmap_mode="r")
        return self._data


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=300)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--start", default="spawn")
    p.add_argument("--mmap", action="store_true")
    a = p.parse_args()
    rows = a.mb * (1 << 20) // (256 * 4)
    data = np.random.default_rng(0).random((rows, 256), dtype=np.float32)
    dataset = Rows(data)
    if a.mmap:
        path = os.path.join(tempfile.mkdtemp(), "data.npy")
        np.save(path, data)
        del data, dataset
        dataset = MappedRows(path)
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=a.workers,
                        multiprocessing_context=a.start, persistent_workers=True)
    model = torch.nn.Linear(256, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, x in enumerate(loader):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 150:
            break


if __name__ == "__main__":
    main()
