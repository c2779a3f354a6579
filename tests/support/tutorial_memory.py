"""The replay memory of the old PyTorch DQN tutorial, as the unit tests' script would hold it: a
list filled to self.capacity, then overwritten in a ring (probes/capacity.py reads its bound)."""

from __future__ import annotations


class ReplayMemory:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.memory: list = []
        self.position = 0

    def push(self, item: object) -> None:
        if len(self.memory) < self.capacity:
            self.memory.append(None)
        self.memory[self.position] = item
        self.position = (self.position + 1) % self.capacity
