"""Top-5 accuracy tracked during training, sample by sample: `for k in range(len(y)): if y[k] in
out[k].topk(5).indices:` after each step. gpubottle should lead with the same ops on all rows at
once, at the loop's line (5.6 s -> 3.9 s here, the same accuracy), and put "every 10 steps" around
the loop, not inside it."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 100))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X = torch.randn(20000, 256)
Y = torch.randint(0, 100, (20000,))
correct = seen = 0
for _ in range(800):
    i = torch.randint(0, 20000, (256,))
    x, y = X[i], Y[i]
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    for k in range(len(y)):
        if y[k] in out[k].topk(5).indices:
            correct += 1
        seen += 1
print("top5", correct / seen)
