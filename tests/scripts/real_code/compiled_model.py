"""A model wrapped in torch.compile (the aot_eager backend: no C++ compiler needed): its first
calls trace and compile it, and a change of the sequence length recompiles it. That time is
compiling, warm-up the run pays, not the model's arithmetic. Options: --steps."""
import argparse
import os

# Compiled afresh every run, as on a first run: a warm cache from an earlier run would hide it.
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64)) for _ in range(20)],
                      nn.Linear(64, 4))
fast = torch.compile(model, backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(a.steps):
    length = 16 if step < 100 else 24  # a new length at step 100: recompiled (dynamic from then on)
    x, y = torch.randn(8, length, 64), torch.randint(0, 4, (8, length))
    loss = nn.functional.cross_entropy(fast(x).reshape(-1, 4), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
