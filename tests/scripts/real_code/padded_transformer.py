"""A small transformer classifier over sequences of 20 to 200 tokens, each batch padded to its own
longest sample (pad_sequence in the collate_fn) from a shuffled loader: about 40% of each batch's
positions are padding, and attention's cost grows with the square of the padded length. Options:
--epochs, --samples."""

import argparse
import random

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--samples", type=int, default=960)
args = p.parse_args()
random.seed(0)
torch.manual_seed(0)
data = [(torch.randint(1, 5000, (random.randint(20, 200),)), random.randint(0, 3))
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
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = nn.Linear(64, 4)

    def forward(self, x):
        h = self.enc(self.emb(x), src_key_padding_mask=(x == 0))
        return self.out(h.mean(1))


model = Classifier()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
loader = DataLoader(Sequences(), batch_size=32, shuffle=True, collate_fn=collate)
for _epoch in range(args.epochs):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
