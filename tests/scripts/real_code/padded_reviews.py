"""Text classification as tutorials write it: each review's token ids padded in __getitem__ to a
fixed MAX_LEN of 256, where the reviews are 10-64 tokens long, then an embedding and an LSTM over
every position. Options: --texts, --epochs, --max-len (the reviews a 25th to a quarter of it)."""
import argparse
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--texts", type=int, default=4000)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--max-len", type=int, default=256)
a = p.parse_args()
MAX_LEN = a.max_len
random.seed(0)
torch.manual_seed(0)
texts = [[random.randrange(1, 5000) for _ in range(random.randint(MAX_LEN // 25, MAX_LEN // 4))]
         for _ in range(a.texts)]
labels = [random.randrange(2) for _ in texts]


class Reviews(Dataset):
    def __len__(self):
        return len(texts)

    def __getitem__(self, i):
        ids = texts[i][:MAX_LEN]
        ids = ids + [0] * (MAX_LEN - len(ids))
        return torch.tensor(ids), labels[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5000, 64, padding_idx=0)
        self.lstm = nn.LSTM(64, 64, batch_first=True)
        self.head = nn.Linear(64, 2)

    def forward(self, ids):
        out, _ = self.lstm(self.emb(ids))
        return self.head(out[:, -1])


loader = DataLoader(Reviews(), batch_size=32, shuffle=True)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(a.epochs):
    for ids, y in loader:
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
