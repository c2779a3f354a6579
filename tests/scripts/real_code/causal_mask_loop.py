"""A small causal language model whose attention mask is built in the forward at every call, entry
by entry: `for i in range(T): for j in range(i + 1, T): mask[i, j] = float("-inf")` (T = 128:
8,128 indexing ops a call). gpubottle read compute-bound with torch.compile, the fill unnamed
(its writes index elements, not rows). It should name the fill at its outer `for` with one op
(torch.triu) made once: the script faster by the fill's share, the same loss. Options: --steps,
--length."""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--length", type=int, default=128)
a = ap.parse_args()
torch.manual_seed(0)
V, D, L = 500, 64, a.length


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Embedding(L, D)
        layer = nn.TransformerEncoderLayer(D, 4, 128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(D, V)

    def forward(self, x):
        T = x.shape[1]
        mask = torch.zeros(T, T)
        for i in range(T):
            for j in range(i + 1, T):
                mask[i, j] = float("-inf")
        h = self.emb(x) + self.pos(torch.arange(T))
        return self.out(self.enc(h, mask=mask))


data = torch.randint(0, V, (5000, L + 1))
model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), 3e-4)
for _step in range(a.steps):
    b = data[torch.randint(0, len(data), (16,))]
    logits = model(b[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), b[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
