"""Each step also measures the loss on a fixed validation batch (model.eval() and no_grad), as
some tutorials do for a live plot: inline in the training loop, not in a helper."""
import torch
from torch import nn


def main():
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Dropout(0.1), nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xv, yv = torch.randn(2048, 256), torch.randint(0, 10, (2048,))
    history = []
    for _step in range(300):
        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            history.append(nn.functional.cross_entropy(model(xv), yv).item())
        model.train()
    print(f"final val loss {history[-1]:.3f}")


if __name__ == "__main__":
    main()
