"""A bag-of-ids classifier whose forward embeds each sample's ids (5-50 of them) and averages
them one sample at a time (`torch.stack([self.emb(torch.tensor(ids)).mean(0) for ids in
batch_ids])`): 128 lookups a step, each with its own dense gradient of the 50,000 x 64 table.
gpubottle read it as the model's own math, torch.compile first. It should name the lookups with
nn.EmbeddingBag(mode='mean') on all ids and their offsets: the same loss (400 steps 61.1 s ->
3.7 s here). Options: --steps."""
import argparse
import random

import torch
from torch import nn

VOCAB = 50000


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.out = nn.Linear(64, 3)

    def forward(self, batch_ids):
        vecs = torch.stack([self.emb(torch.tensor(ids)).mean(0) for ids in batch_ids])
        return self.out(vecs)


ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=400)
a = ap.parse_args()
random.seed(0)
torch.manual_seed(0)
model = Bag()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(a.steps):
    batch = [[random.randrange(VOCAB) for _ in range(random.randint(5, 50))] for _ in range(128)]
    y = torch.randint(0, 3, (128,))
    loss = nn.functional.cross_entropy(model(batch), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
