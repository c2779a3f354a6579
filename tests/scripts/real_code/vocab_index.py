"""A text dataset mapping each word to its id with `vocab.index(w) if w in vocab`, two searches of
a 5,002-word list per word. Measured when written: 130 ms a batch of 64 (40 words a sample), 0.5
ms through a dict made once. Options: --texts, --epochs."""

import argparse
import random
import re

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--texts", type=int, default=2500)
p.add_argument("--epochs", type=int, default=1)
args = p.parse_args()

random.seed(0)
WORDS = [f"w{i}" for i in range(5000)]
vocab = ["<pad>", "<unk>"] + WORDS
texts = [" ".join(random.choice(WORDS) + random.choice(["", ",", "!", "."]) for _ in range(40))
         for _ in range(args.texts)]
labels = [random.randint(0, 1) for _ in texts]


class Reviews(Dataset):
    def __init__(self, texts, labels):
        self.texts, self.labels = texts, labels

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        t = re.sub(r"[^a-z0-9 ]", "", self.texts[i].lower())
        ids = [vocab.index(w) if w in vocab else 1 for w in t.split()]
        return torch.tensor(ids[:40] + [0] * (40 - len(ids))), self.labels[i]


model = nn.Sequential(nn.EmbeddingBag(len(vocab), 64), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
loader = DataLoader(Reviews(texts, labels), batch_size=64, shuffle=True)
for _epoch in range(args.epochs):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("done")
