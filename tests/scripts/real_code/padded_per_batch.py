"""An LSTM classifier over sequences of 5 to 300 tokens, each batch padded to its own longest
sample (pad_sequence in the collate_fn) from a shuffled loader: samples of every length drawn
together, about half of each batch's positions padding. Options: --epochs, --samples."""

import argparse
import random

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--samples", type=int, default=2000)
args = p.parse_args()
random.seed(0)
torch.manual_seed(0)
data = [(torch.randint(1, 5000, (random.randint(5, 300),)), random.randint(0, 1))
        for _ in range(args.samples)]


class Sequences(Dataset):
    def __len__(self):
        return len(data)

    def __getitem__(self, i):
        return data[i]


def collate(batch):
    xs, ys = zip(*batch)
    return pad_sequence(xs, batch_first=True), torch.tensor(ys)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5000, 64, padding_idx=0)
        self.rnn = nn.LSTM(64, 128, batch_first=True)
        self.out = nn.Linear(128, 2)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h.mean(1))


model = Classifier()
opt = torch.optim.Adam(model.parameters())
loader = DataLoader(Sequences(), batch_size=32, shuffle=True, collate_fn=collate)
for _epoch in range(args.epochs):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
