"""A tiny GPT-style model whose causal mask is made at every call from a nested comprehension of
Python comparisons: `torch.tensor([[j > i for j in range(t)] for i in range(t)])` (T = 128: 16,384
values a call, ~2 ms, a fifth to a quarter of a step of one encoder layer on 4 sequences).
gpubottle read compute-bound with torch.compile first, the mask unnamed. It should name the line
with the comparison made on whole ranges, once: the script faster by its share, the same loss.
Options: --steps."""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
a = ap.parse_args()
torch.manual_seed(0)
V, T, D = 256, 128, 64


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        layer = nn.TransformerEncoderLayer(D, 4, 128, batch_first=True, dropout=0.0)
        self.blocks = nn.TransformerEncoder(layer, 1)
        self.head = nn.Linear(D, V)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.tensor([[j > i for j in range(t)] for i in range(t)])
        h = self.tok(idx) + self.pos(torch.arange(t))
        return self.head(self.blocks(h, mask=mask))


model = TinyGPT()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.randint(0, V, (4096, T + 1))
for _step in range(a.steps):
    b = data[torch.randint(0, len(data), (4,))]
    logits = model(b[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), b[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
