"""A cheap model step followed by per-step metrics in pure Python: the loop's own code, not the
model, sets the pace. gpubottle should name per_sample_metrics, not propose faster math."""
import sys

import torch
from torch import nn

# One thread: on a loaded machine each tiny parallel op would wait for a second core, and the model,
# not the metrics, would set the pace (measured: 34% forward under two busy loops, 1% alone).
torch.set_num_threads(1)
model = nn.Linear(32, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(4096, 32), torch.randint(0, 64, (4096,))


def per_sample_metrics(logits, y):
    rows, targets = logits.detach().tolist(), y.tolist()
    hits = 0
    for row, t in zip(rows, targets):
        best = max(range(len(row)), key=row.__getitem__)
        hits += int(best == t)
        _ = [sorted(row, reverse=k % 2 == 0) for k in range(16)]
    return hits / len(targets)


for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1200):
    i = (step * 128) % (4096 - 128)
    x, y = X[i:i + 128], Y[i:i + 128]
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    per_sample_metrics(out, y)
