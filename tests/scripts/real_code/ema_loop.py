"""A training loop that keeps an exponential moving average of its weights, the way timm's
ModelEmaV2 and many diffusion scripts write it: after every step, a walk over both state_dicts in
Python, a few small ops per tensor (242 of them). Measured when written: the update took 40-50% of
each step; one torch._foreach_lerp_ over the tensors does the same update in a few calls (alone:
4.5 ms a walk, 1.3 ms foreach over fresh state_dicts, 0.2 ms foreach over lists kept once)."""
import argparse
import copy

import torch


class ModelEma:
    def __init__(self, model: torch.nn.Module, decay: float) -> None:
        self.module = copy.deepcopy(model).eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            ema_v.copy_(self.decay * ema_v + (1.0 - self.decay) * model_v)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # 32-wide layers gain nothing from threads (two made its timing bimodal)
    layers = [torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.LayerNorm(32)) for _ in range(60)]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(32, 1))
    ema = ModelEma(model, 0.999)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(a.steps):
        x = torch.randn(8, 32)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update(model)


if __name__ == "__main__":
    main()
