"""A block that fails under gpubottle.profile(): the exception (or Ctrl-C) goes on unchanged, and
the report is still written. `python profile_fails.py OUT_DIR value-error|interrupt`"""

import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

import gpubottle

out, how = sys.argv[1], sys.argv[2]
loader = DataLoader(TensorDataset(torch.randn(640, 32), torch.randint(0, 2, (640,))), batch_size=16)
model = torch.nn.Linear(32, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
p = gpubottle.profile(out=out, show=False)
try:
    with p:
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step == 20:
                raise KeyboardInterrupt() if how == "interrupt" else ValueError("bad batch at step 20")
finally:
    print("REPORT", p.report["primary"] if p.report else None, p.report["source"]["stop_reason"]
          if p.report else None, flush=True)
