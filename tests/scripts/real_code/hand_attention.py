"""A small causal transformer whose attention is written by hand, as many GPT-style scripts do:
scores q @ k^T scaled and masked, a softmax, the probabilities times v. Options: --steps, --tokens."""

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--tokens", type=int, default=512)
args = p.parse_args()


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


torch.manual_seed(0)
vocab, d = 1000, 256
emb = nn.Embedding(vocab, d)
blocks = nn.Sequential(*[Block(d, 4, args.tokens) for _ in range(2)])
head = nn.Linear(d, vocab)
params = [*emb.parameters(), *blocks.parameters(), *head.parameters()]
opt = torch.optim.AdamW(params, lr=3e-4)
for _step in range(args.steps):
    ids = torch.randint(0, vocab, (8, args.tokens + 1))
    logits = head(blocks(emb(ids[:, :-1])))
    loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
