"""Greedy generation with a small transformer, token by token, each call re-running the whole
sequence (a hand-written generate(), no key/value cache), one prompt at a time; no DataLoader,
backward or optimizer step. Measured when written: 24 prompts of 16 tokens, 48 new each, 0.90-1.12
s; the 24 as one batch 0.42-0.47 s. Options: --prompts, --new."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--prompts", type=int, default=24)
p.add_argument("--new", type=int, default=48)
args = p.parse_args()

class TinyLM(nn.Module):
    def __init__(self, vocab=1000, d=128, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(512, d)
        layer = nn.TransformerEncoderLayer(d, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)
    def forward(self, ids):
        T = ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.emb(ids) + self.pos(torch.arange(T))
        return self.head(self.enc(h, mask=mask, is_causal=True))

model = TinyLM().eval()
outs = []
with torch.no_grad():
    for _i in range(args.prompts):
        seq = torch.randint(0, 1000, (1, 16))
        for _t in range(args.new):
            logits = model(seq)
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], dim=1)
        outs.append(seq)
print("done", len(outs))
