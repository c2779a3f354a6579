"""Transfer-bound (GPU): big batches cross PCIe from pageable memory every step, for little math.

Expected verdict: transfer-bound. Each step copies a 64 MiB float32 batch (a slice of a host
tensor, no DataLoader) host-to-device from ordinary (pageable) memory, synchronously, then runs one
small linear layer. The copies dominate the
step; gpubottle should say so from the profiler window and propose pin_memory=True with
non_blocking=True (and sending less: uint8, or keeping the data on the GPU).

    gpubottle run examples/gpu/transfer_bound.py
"""

import torch
from torch import nn


def main() -> None:
    dev = torch.device("cuda")
    rows, width, batch = 2048, 65536, 256  # 512 MiB on the host, 64 MiB per batch
    data = torch.randn(rows, width)  # ordinary (pageable) host memory
    target = torch.randint(0, 10, (rows,))
    model = nn.Linear(width, 10).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _epoch in range(8):
        for i in range(0, rows, batch):
            x, y = data[i : i + batch].to(dev), target[i : i + batch].to(dev)  # pageable, synchronous
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(f"final loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
