"""A next-token LSTM whose criterion is a loss module of the script (SequenceLoss): its forward
adds up a cross-entropy per time step (`for t in range(logits.size(1)): total = total +
self.ce(logits[:, t], targets[:, t])`), as a per-step formula reads. Each of the 96 slices'
backward writes a gradient as large as all of the 24 x 96 x 3000 logits and autograd sums them.
The loop sits in the module's forward, not beside the model's call: gpubottle followed only a
function of the file the output is passed to. It should name the loop in SequenceLoss.forward
with one loss over the whole tensor, by the module's own names. Options: --steps."""
import argparse

import torch
from torch import nn

V, T, B = 3000, 96, 24


class SequenceLoss(nn.Module):
    """Cross-entropy averaged over the time steps."""

    def __init__(self):
        super().__init__()
        self.ce = nn.CrossEntropyLoss()

    def forward(self, logits, targets):
        total = 0.0
        for t in range(logits.size(1)):
            total = total + self.ce(logits[:, t], targets[:, t])
        return total / logits.size(1)


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 96)
        self.lstm = nn.LSTM(96, 128, batch_first=True)
        self.head = nn.Linear(128, V)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = LanguageModel()
    criterion = SequenceLoss()
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    for step in range(a.steps):
        batch = torch.randint(0, V, (B, T + 1))
        inputs, targets = batch[:, :-1], batch[:, 1:]
        logits = model(inputs)
        loss = criterion(logits, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
