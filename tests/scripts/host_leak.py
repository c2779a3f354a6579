"""Keeps every batch in a module-level list: host memory climbs ~40 MB/s until the run ends (the
sleep sets the pace, so a loaded machine changes it little). With `losses` as the second argument
it keeps every loss instead, its graph retained: the graph keeps the batch (the weight's gradient
needs it), which no list of the script holds. With `window` it keeps the batches in a
deque(maxlen=2000) instead: memory climbs the same until it holds 2,000 (~1 GB), then levels off.
With `arrays` it also keeps a numpy copy of each batch's first half in a second list (numpy
arrays, which no tensor census counts). With `ring` it keeps them in the replay memory of the old
PyTorch DQN tutorial: a list its class fills to a capacity of 2,000, then overwrites in a ring."""
import sys
import time
from collections import deque

import torch
from torch import nn


class ReplayMemory:
    def __init__(self, capacity):
        self.capacity = capacity
        self.memory = []
        self.position = 0

    def push(self, item):
        if len(self.memory) < self.capacity:
            self.memory.append(None)
        self.memory[self.position] = item
        self.position = (self.position + 1) % self.capacity


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 14.0
keep = sys.argv[2] if len(sys.argv) > 2 else "batches"
model = nn.Linear(256, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
seen_batches = []
seen_losses = []
seen_window = deque(maxlen=2000)
seen_arrays = []
replay = ReplayMemory(2000)
end = time.monotonic() + seconds
while time.monotonic() < end:
    x = torch.randn(512, 256)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=keep == "losses")
    opt.step()
    if keep == "losses":
        seen_losses.append(loss)  # with its graph, and the graph with the batch
    elif keep == "arrays":
        seen_batches.append(x)
        seen_arrays.append(x[:256].numpy().copy())  # and half of it again, as numpy
    elif keep == "window":
        seen_window.append(x)  # the last 2,000 batches: bounded
    elif keep == "ring":
        replay.push(x)  # the last 2,000 too, in a list its class bounds
    else:
        seen_batches.append(x)  # "for later analysis": never freed
    time.sleep(0.01)
