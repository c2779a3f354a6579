"""DQN with its replay buffer in a collections.deque(maxlen=N), sampled each step by
random.sample(buffer, 128), as DQN tutorials write it. A deque reaches its i-th item by walking
its blocks from the nearer end: 128 draws from 300,000 transitions took ~2 ms of a ~3-ms step.
gpubottle named the line with "make the ops on that line cheaper". It should say the draws walk
the deque, with a list used as a ring: the step faster, the same draws. Options: --steps."""
import argparse
import random
from collections import deque

import numpy as np
import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=1500)
a = ap.parse_args()
random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
OBS, ACT = 16, 4
buffer = deque(maxlen=400_000)
q = nn.Sequential(nn.Linear(OBS, 128), nn.ReLU(), nn.Linear(128, ACT))
target = nn.Sequential(nn.Linear(OBS, 128), nn.ReLU(), nn.Linear(128, ACT))
target.load_state_dict(q.state_dict())
opt = torch.optim.Adam(q.parameters(), lr=1e-3)
state = np.random.randn(OBS).astype(np.float32)
for _ in range(300_000):  # transitions from earlier episodes
    nxt = np.random.randn(OBS).astype(np.float32)
    buffer.append((state, random.randrange(ACT), random.random(), nxt, False))
    state = nxt
for step in range(a.steps):
    with torch.no_grad():
        act = int(q(torch.from_numpy(state)).argmax())
    nxt = np.random.randn(OBS).astype(np.float32)
    buffer.append((state, act, float(state[act]), nxt, False))
    state = nxt
    batch = random.sample(buffer, 128)
    s, a_, r, s2, _done = zip(*batch)
    s, s2 = torch.from_numpy(np.stack(s)), torch.from_numpy(np.stack(s2))
    a_, r = torch.tensor(a_), torch.tensor(r, dtype=torch.float32)
    with torch.no_grad():
        y = r + 0.99 * target(s2).max(1).values
    loss = nn.functional.smooth_l1_loss(q(s).gather(1, a_[:, None]).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 500 == 0:
        target.load_state_dict(q.state_dict())
print(f"loss {loss.item():.4f}")
