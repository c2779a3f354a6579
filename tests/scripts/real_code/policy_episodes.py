"""An agent trained with REINFORCE on a hand-written environment, as RL tutorials write it: the
policy is called once per environment step on that step's state (a batch of one), and the next
state comes from acting on its sampled action, so one episode's calls cannot be one call.
Options: --episodes, --length (environment steps an episode)."""
import argparse

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--episodes", type=int, default=150)
p.add_argument("--length", type=int, default=32)
a = p.parse_args()
torch.manual_seed(0)
rng = np.random.default_rng(0)


class Walk:
    """A point pushed left or right, rewarded for staying near the middle."""

    def reset(self):
        self.x = rng.uniform(-1, 1, 4)
        return self.x.copy()

    def step(self, action):
        self.x = 0.9 * self.x + (0.1 if action == 1 else -0.1) + rng.normal(0, 0.01, 4)
        return self.x.copy(), -float(np.abs(self.x).sum())


policy = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
env = Walk()
for _episode in range(a.episodes):
    state, logps, rewards = env.reset(), [], []
    for _t in range(a.length):
        logits = policy(torch.tensor(state, dtype=torch.float32).unsqueeze(0))
        dist = torch.distributions.Categorical(logits=logits[0])
        action = dist.sample()
        logps.append(dist.log_prob(action))
        state, reward = env.step(action.item())
        rewards.append(reward)
    returns = torch.tensor(np.cumsum(rewards[::-1])[::-1].copy(), dtype=torch.float32)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = -(torch.stack(logps) * returns).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
