"""Trains a few steps, then dies the way a CUDA OOM does (torch.cuda.OutOfMemoryError).

The exception is raised by hand because this machine has no GPU; everything gpubottle does with it
(catching the state on the way out, the oom-risk verdict) is the real path."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(1024, 32), torch.randint(0, 2, (1024,)))
loader = DataLoader(data, batch_size=64)
model = nn.Linear(32, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i == 10:
        raise torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
            "of which 1.20 GiB is free. Of the allocated memory 74.80 GiB is allocated by PyTorch")
