"""Lists a class of the script keeps below a number of its own (probes/capacity.py): the bound is
read from the class's source, its value from the object or the class's module."""

from __future__ import annotations

import torch
from tutorial_memory import ReplayMemory

from gpubottle.probes.capacity import list_capacity

CAPACITY = 500


class Trimmed:
    def __init__(self):
        self.max_size = 300
        self.buf = []
        self.recent = []
        self.log = []
        self.limit = 2.5

    def add(self, x):
        self.buf.append(x)
        if len(self.buf) > self.max_size:
            self.buf.pop(0)
        self.recent.append(x)
        self.recent = self.recent[-CAPACITY:]
        self.log.append(x)
        if len(self.log) > self.limit:  # not a count: no bound
            self.log.clear()


class Unbounded:
    def __init__(self):
        self.items = []
        self.size = 10

    def add(self, x):
        self.items.append(x)
        if len(self.items) % 100 == 0:  # len compared with no name
            print(self.size)


def test_the_bound_is_the_number_the_class_compares_the_lists_length_with():
    m = ReplayMemory(2000)  # the old DQN tutorial's: filled to capacity, then a ring
    for _ in range(3):
        m.push(torch.zeros(2))
    assert list_capacity(m, "memory") == ("ReplayMemory.capacity", 2000)
    t = Trimmed()
    assert list_capacity(t, "buf") == ("Trimmed.max_size", 300)
    assert list_capacity(t, "recent") == ("CAPACITY", 500)  # a module constant, by its slice
    assert list_capacity(t, "log") is None  # a float is no count
    u = Unbounded()
    assert list_capacity(u, "items") is None
    assert list_capacity(m, "position") is None
    m.capacity = 0  # nothing it could hold
    assert list_capacity(m, "memory") is None


def test_a_class_without_source_has_no_bound():
    Made = type("Made", (), {"__init__": lambda self: setattr(self, "items", [])})
    assert list_capacity(Made(), "items") is None
