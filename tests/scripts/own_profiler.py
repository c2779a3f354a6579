"""A training loop that profiles itself with torch.profiler from step START (argv[1]) and writes its
own trace to argv[2]: gpubottle's window must step aside and leave that trace whole."""
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

start, out = int(sys.argv[1]), sys.argv[2]
model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
prof = None
for i in range(30):
    if i == start:
        prof = profile(activities=[ProfilerActivity.CPU],
                       schedule=schedule(wait=1, warmup=1, active=4, repeat=1),
                       on_trace_ready=lambda p: p.export_chrome_trace(out))
        prof.start()
    loss = model(torch.randn(32, 64)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if prof is not None:
        prof.step()
if prof is not None:
    prof.stop()
