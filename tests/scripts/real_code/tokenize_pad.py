"""Review classification with the text tokenized in collate_fn (a regex and a vocabulary dict), the
ids padded into the batch value by value, as tutorials write it."""

import argparse
import random
import re

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
args = p.parse_args()

random.seed(1)
words = ["the", "a", "movie", "was", "great", "bad", "plot", "actor", "not", "very", "fun", "boring"]
texts = [" ".join(random.choice(words) for _ in range(random.randint(80, 300))) for _ in range(4000)]
labels = [random.randint(0, 1) for _ in texts]
vocab = {w: i + 2 for i, w in enumerate(words)}
TOKEN = re.compile(r"\w+|[^\w\s]")


def collate(batch):
    ids = [[vocab.get(t.lower(), 1) for t in TOKEN.findall(text)] for text, _ in batch]
    longest = max(len(x) for x in ids)
    out = torch.zeros(len(ids), longest, dtype=torch.long)
    for i, x in enumerate(ids):
        for j, v in enumerate(x):
            out[i, j] = v
    return out, torch.tensor([y for _, y in batch])


loader = DataLoader(list(zip(texts, labels)), batch_size=32, shuffle=True, collate_fn=collate)
model = nn.Sequential(nn.EmbeddingBag(len(vocab) + 2, 64), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
step = 0
while step < args.steps:
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == args.steps:
            break
