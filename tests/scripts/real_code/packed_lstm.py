"""An LSTM classifier over sequences of 5 to 300 tokens padded per batch and packed
(pack_padded_sequence): the LSTM skips the padding, so the padding is no finding. Options: --steps."""

import argparse
import random

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
args = p.parse_args()
random.seed(0)
data = [(torch.randint(1, 5000, (random.randint(5, 300),)), random.randint(0, 1)) for _ in range(2000)]


class Sequences(Dataset):
    def __len__(self):
        return len(data)

    def __getitem__(self, i):
        return data[i]


def collate(batch):
    batch = sorted(batch, key=lambda b: len(b[0]), reverse=True)
    xs, ys = zip(*batch)
    return pad_sequence(xs, batch_first=True), torch.tensor([len(x) for x in xs]), torch.tensor(ys)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5000, 64, padding_idx=0)
        self.rnn = nn.LSTM(64, 128, batch_first=True)
        self.out = nn.Linear(128, 2)

    def forward(self, x, lengths):
        _, (h, _) = self.rnn(pack_padded_sequence(self.emb(x), lengths, batch_first=True))
        return self.out(h[-1])


model = Classifier()
opt = torch.optim.Adam(model.parameters())
loader = DataLoader(Sequences(), batch_size=32, shuffle=True, collate_fn=collate)
for step, (x, lengths, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x, lengths), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 == args.steps:
        break
