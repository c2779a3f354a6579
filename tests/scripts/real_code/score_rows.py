"""Scoring records with a trained MLP the way a service loop does, one record a call
(`for r in records: model(r.unsqueeze(0))`), under no_grad: no training step, the time in the
model's per-call cost. Options: --records, --batch (the fix: rows a call)."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--records", type=int, default=40000)
p.add_argument("--batch", type=int, default=0)
a = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
model.eval()
records = torch.randn(a.records, 64)
scores = []
with torch.no_grad():
    if a.batch:
        for i in range(0, len(records), a.batch):
            scores += torch.sigmoid(model(records[i:i + a.batch])).squeeze(1).tolist()
    else:
        for r in records:
            scores.append(torch.sigmoid(model(r.unsqueeze(0))).item())
print(round(sum(scores) / len(scores), 4))
