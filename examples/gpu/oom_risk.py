"""OOM (GPU): every step keeps 1 GiB of activations in a history list, until the GPU is full.

Expected verdict: oom-risk (critical). The script dies with torch.cuda.OutOfMemoryError after as
many steps as the device has GiB; gpubottle should report the OOM with the allocator's state at that
moment and fixes for the memory (smaller batch with accumulation, autocast, checkpointing).

    gpubottle run examples/gpu/oom_risk.py
"""

import torch
from torch import nn


def main() -> None:
    dev = torch.device("cuda")
    model = nn.Linear(1024, 1024).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    history = []
    step = 0
    while True:
        x = torch.randn(1024, 1024, device=dev)
        out = model(x)
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(torch.empty(256 * 1024 * 1024, device=dev))  # 1 GiB kept "for logging"
        step += 1
        if step % 10 == 0:
            print(f"step {step}, {torch.cuda.memory_allocated() / 2**30:.0f} GiB allocated", flush=True)


if __name__ == "__main__":
    main()
