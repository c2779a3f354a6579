"""Knowledge distillation as it is often first written: the teacher's output is the student's
target, and the teacher is called with autograd on. It is in eval mode and no optimizer holds its
parameters, but they still require grad, so each step's backward runs through the teacher and
computes a gradient for every one of its 1.3M weights. Options: --steps."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
a = p.parse_args()
torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                        nn.Linear(1024, 10))
student = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
teacher.eval()
opt = torch.optim.SGD(student.parameters(), lr=0.01)
data = torch.randn(4096, 256)
for step in range(a.steps):
    x = data[(step * 64) % 4096:(step * 64) % 4096 + 64]
    soft = teacher(x)
    loss = F.kl_div(F.log_softmax(student(x), -1), F.softmax(soft, -1), reduction="batchmean")
    opt.zero_grad()
    loss.backward()
    opt.step()
