"""A character-level language model whose LSTMCell is stepped in Python over each sequence (the
input at each step read from the embedded sequence, made before the loop), as tutorials write it.
Options: --steps, --seq-len."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=120)
p.add_argument("--seq-len", type=int, default=64)
a = p.parse_args()
torch.manual_seed(0)
V, H, B = 64, 128, 32
data = torch.randint(0, V, (2000, a.seq_len + 1))


class CharRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.cell = nn.LSTMCell(H, H)
        self.out = nn.Linear(H, V)

    def forward(self, x):
        h = torch.zeros(x.size(0), H)
        c = torch.zeros(x.size(0), H)
        e = self.emb(x)
        outs = []
        for t in range(x.size(1)):
            h, c = self.cell(e[:, t], (h, c))
            outs.append(self.out(h))
        return torch.stack(outs, 1)


model = CharRNN()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
crit = nn.CrossEntropyLoss()
for _step in range(a.steps):
    seq = data[torch.randint(0, len(data), (B,))]
    logits = model(seq[:, :-1])
    loss = crit(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f}")
