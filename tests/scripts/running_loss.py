"""Sums each step's loss into a running total for its log line, the loss still carrying its
autograd graph (`running += loss` instead of `loss.item()`): the total's graph holds every step's,
and a GRU's graph on the CPU keeps ~1 MB a step after its backward, so host memory climbs at the
step's pace until the run ends. No list of the script's grows and no tensor piles up where Python
sees it: one tensor holds it all. Argument: seconds to run (14)."""
import sys
import time

import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(32, 128, batch_first=True)
        self.out = nn.Linear(128, 4)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h[:, -1])


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 14.0
    torch.manual_seed(0)
    model = Tagger()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    running = 0.0
    step = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        x, y = torch.randn(8, 50, 32), torch.randint(0, 4, (8,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss
        step += 1
        if step % 100 == 0:
            print(f"step {step}: mean loss {running / step:.3f}")


if __name__ == "__main__":
    main()
