"""Whether a dataset's __getitem__ gives the same sample every epoch, read from its source: nothing
drawn at random in it or in what of its own file it calls, nothing kept on self. Only True reaches
the user ("make them all once in __init__"); a call that could draw and cannot be read (a transform
it was given) is None."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.sample_random import same_every_epoch

SOURCE = """import random, re
import numpy as np
import torch
from torchvision import transforms as T

TOKEN = re.compile("[a-z]+")
AUG = T.RandomCrop(24)


def pad(ids, n):
    return ids + [0] * (n - len(ids))


def jitter(x):
    return x + torch.randn_like(x) * 0.1


class Text:
    def __getitem__(self, i):
        ids = [self.vocab.get(t, 1) for t in TOKEN.findall(self.texts[i].lower())]
        return torch.tensor(pad(ids, 256)), self.labels[i]


class Noisy:
    def __getitem__(self, i):
        return jitter(self.x[i])


class Flipped:
    def __getitem__(self, i):
        x = self.x[i]
        if random.random() < 0.5:
            x = x.flip(-1)
        return x


class Generator:
    def __getitem__(self, i):
        return self.rng.integers(0, 10)


class Given:
    def __getitem__(self, i):
        return self.transform(self.x[i])


class Module:
    def __getitem__(self, i):
        return AUG(self.x[i])


class Cached:
    def __getitem__(self, i):
        if i not in self.cache:
            self.cache[i] = self._make(i)
        return self.cache[i]

    def _make(self, i):
        return self.x[i] * 2


class Helper:
    def __getitem__(self, i):
        return self._load(i)

    def _load(self, i):
        return np.load(self.paths[i])

    @staticmethod
    def other():
        return 0


class Curriculum:
    def set_epoch(self, epoch):
        self.max_len = 32 + 16 * epoch

    def __getitem__(self, i):
        return self.x[i][: self.max_len]


class Masked:
    def __getitem__(self, i):
        x = self.x[i].clone()
        x[torch.rand(x.shape) < 0.15] = 0
        return x
"""


def _at(path: str, cls: str) -> str:
    lines = Path(path).read_text().splitlines()
    start = lines.index(f"class {cls}:")
    line = next(n for n, s in enumerate(lines[start:], start + 1) if "def __getitem__" in s)
    return f"{path}:{line}"


def test_a_getitem_that_draws_nothing_gives_the_same_sample_every_epoch(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    Path(path).write_text(SOURCE)
    assert same_every_epoch(_at(path, "Text")) is True  # a regex, a dict, a helper of its file
    assert same_every_epoch(_at(path, "Helper")) is True  # its own method, reading a file


def test_a_draw_in_it_or_in_what_it_calls_is_not(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    Path(path).write_text(SOURCE)
    assert same_every_epoch(_at(path, "Noisy")) is False  # a function of its file that draws
    assert same_every_epoch(_at(path, "Flipped")) is False
    assert same_every_epoch(_at(path, "Generator")) is False  # numpy's Generator
    assert same_every_epoch(_at(path, "Masked")) is False


def test_what_cannot_be_read_is_not_known(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    Path(path).write_text(SOURCE)
    assert same_every_epoch(_at(path, "Given")) is None  # a transform it was given
    assert same_every_epoch(_at(path, "Module")) is None  # an object made at module level
    assert same_every_epoch(_at(path, "Cached")) is None  # keeps its samples on self already
    assert same_every_epoch(_at(path, "Curriculum")) is None  # what it reads, set by another method
    assert same_every_epoch(f"{path}:1") is None  # no method there
    assert same_every_epoch(str(tmp_path / "gone.py") + ":3") is None
    assert same_every_epoch("cell [3], line 4") is None
