"""Review classification with the text tokenized in __getitem__, as tutorials write it: a regex
splits each review, a vocabulary dict maps the words, the ids are padded to 256. Nothing in it is
random, so every epoch repeats the same work for the same ids (~100 us a sample here, a third of
the step waited for). Options: --texts, --epochs."""
import argparse
import random
import re

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--texts", type=int, default=6000)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
random.seed(0)
torch.manual_seed(0)
WORDS = [f"w{i}" for i in range(20000)]
TEXTS = [" ".join(random.choice(WORDS) for _ in range(random.randint(50, 400))) + "!"
         for _ in range(a.texts)]
LABELS = [random.randint(0, 1) for _ in TEXTS]
VOCAB = {w: i + 2 for i, w in enumerate(WORDS)}
TOKEN = re.compile(r"[a-z0-9']+")


class Reviews(Dataset):
    def __init__(self, texts, labels, max_len=256):
        self.texts, self.labels, self.max_len = texts, labels, max_len

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        toks = TOKEN.findall(self.texts[i].lower())
        ids = [VOCAB.get(t, 1) for t in toks][: self.max_len]
        ids = ids + [0] * (self.max_len - len(ids))
        return torch.tensor(ids), self.labels[i]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(20002, 64, mode="mean", padding_idx=0)
        self.fc = nn.Linear(64, 2)

    def forward(self, x):
        return self.fc(self.emb(x))


loader = DataLoader(Reviews(TEXTS, LABELS), batch_size=32, shuffle=True)
model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(a.epochs):
    total = 0.0
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / len(loader):.4f}")
