"""Batch inference on a CPU with a model whose checkpoint holds subnormal weights (smaller than
1.2e-38: weights that decayed toward zero in training, as in pytorch issue #19651's conv): no
optimizer, the steps are the DataLoader's batches. Here 0.5% of the hidden layer's weights stand in
for them; an x86 CPU multiplies each many times slower (a Linear(1024, 1024): 1.2 ms a call, 4.3 ms
with 0.1% of its weights subnormal). --flush calls torch.set_flush_denormal(True) first. Options:
--batches, --flush."""
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--batches", type=int, default=120)
p.add_argument("--flush", action="store_true")
a = p.parse_args()
if a.flush:
    torch.set_flush_denormal(True)
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
with torch.no_grad():  # the checkpoint's decayed weights
    w = model[2].weight
    w[torch.rand(w.shape) < 0.005] = torch.finfo(torch.float32).tiny / 3
model.eval()
loader = DataLoader(TensorDataset(torch.randn(a.batches * 64, 256)), batch_size=64)
preds = []
with torch.inference_mode():
    for (x,) in loader:
        preds.append(model(x).argmax(1))
print(torch.cat(preds).shape)
