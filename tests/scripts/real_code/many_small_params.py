"""A deep, narrow residual MLP (60 blocks of Linear + LayerNorm: 242 small parameter tensors)
trained with AdamW as most scripts build it. On a CPU torch's default AdamW step is a Python loop
over the tensors, a few small ops each: here it is about half of every step. fused=True updates
them all in one kernel per group (measured when written: step() 15 ms -> 3.5 ms)."""
import argparse

import torch


class Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.norm(torch.relu(self.lin(x)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--blocks", type=int, default=60)
    a = p.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(32) for _ in range(a.blocks)], torch.nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    for step in range(a.steps):
        x = torch.randn(16, 32)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
