"""A bag-of-words text classifier whose collate_fn tokenizes each text of the batch (a regex and a
vocabulary dict), in the main process, every epoch: the samples and the collate draw nothing at
random, so each text's ids come out the same every epoch (measured when written, 2 cores: 4.1 ms
a batch of 64, 68% of a 6.1-ms step waiting for it). Option: --epochs (3)."""
import argparse
import random
import re

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

WORDS = [f"w{i}" for i in range(5000)]
random.seed(0)
TEXTS = [" ".join(random.choices(WORDS, k=random.randint(50, 300))) for _ in range(4000)]
LABELS = [random.randrange(4) for _ in TEXTS]
VOCAB = {w: i for i, w in enumerate(WORDS)}


class Texts(Dataset):
    def __len__(self):
        return len(TEXTS)

    def __getitem__(self, i):
        return TEXTS[i], LABELS[i]


def collate(batch):
    ids, offsets, labels = [], [], []
    for text, label in batch:
        offsets.append(len(ids))
        for tok in re.findall(r"\w+", text.lower()):
            ids.append(VOCAB.get(tok, 0))
        labels.append(label)
    return torch.tensor(ids), torch.tensor(offsets), torch.tensor(labels)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(len(VOCAB), 64, mode="mean")
        self.fc = nn.Linear(64, 4)

    def forward(self, ids, offsets):
        return self.fc(self.emb(ids, offsets))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    train = DataLoader(Texts(), batch_size=64, shuffle=True, collate_fn=collate)
    for epoch in range(a.epochs):
        for ids, offsets, y in train:
            loss = nn.functional.cross_entropy(model(ids, offsets), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print("epoch", epoch, "loss", loss.item())
