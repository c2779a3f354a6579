"""A language-model loop in the style of nanoGPT: batches are random windows of one token tensor
(get_batch, no DataLoader), and every --eval-interval steps estimate_loss() runs --eval-iters
forward passes on each split under no_grad between model.eval() and model.train(). The
evaluation, not training, is a large part of the run. Options: --iters, --eval-interval,
--eval-iters."""
import argparse

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=200)
p.add_argument("--eval-interval", type=int, default=25)
p.add_argument("--eval-iters", type=int, default=40)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(1)
vocab, block, batch = 64, 64, 16
data = torch.randint(0, vocab, (200_000,))
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]


def get_batch(which: str):
    d = train_data if which == "train" else val_data
    ix = torch.randint(len(d) - block - 1, (batch,))
    x = torch.stack([d[i:i + block] for i in ix])
    y = torch.stack([d[i + 1:i + 1 + block] for i in ix])
    return x, y


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, 96)
        self.mix = nn.Sequential(nn.Linear(96, 192), nn.GELU(), nn.Linear(192, 96))
        self.head = nn.Linear(96, vocab)

    def forward(self, x, y):
        h = self.emb(x)
        logits = self.head(h + self.mix(h))
        return nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1))


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


@torch.no_grad()
def estimate_loss() -> dict:
    out = {}
    model.eval()
    for which in ("train", "val"):
        losses = torch.zeros(a.eval_iters)
        for k in range(a.eval_iters):
            losses[k] = model(*get_batch(which)).item()
        out[which] = losses.mean().item()
    model.train()
    return out


for it in range(1, a.iters + 1):
    if it % a.eval_interval == 0:
        losses = estimate_loss()
        print(f"step {it}: train {losses['train']:.3f} val {losses['val']:.3f}", flush=True)
    loss = model(*get_batch("train"))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
