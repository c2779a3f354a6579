"""Statements of a training loop that give the same result at every step (analysis/invariant.py),
read from real files: statistics of a fixed tensor, a mask from fixed sizes; never a statement that
reads what the loop assigns, changes in place, hands to a call or calls (the model, the optimizer,
a function of the script's), nor randomness, nor one outside a loop."""

from __future__ import annotations

import linecache
from pathlib import Path

import pytest

from gpubottle.analysis.invariant import invariant_reads

LOOP = """import torch
X = torch.randn(100, 8)
T = 16
w = torch.ones(8)
model = torch.nn.Linear(8, 2)
for step in range(10):
    idx = torch.randint(0, len(X), (4,))
    {stmt}
    xb = X[idx]
    out = model(xb)
"""


def _reads(tmp_path: Path, stmt: str, extra: str = "") -> tuple[str, ...] | None:
    path = tmp_path / f"loop{abs(hash(stmt + extra))}.py"
    path.write_text(LOOP.format(stmt=stmt) + extra)
    linecache.checkcache(str(path))
    return invariant_reads(str(path), 8)


@pytest.mark.parametrize("stmt, reads", [
    ("mean, std = X.mean(0), X.std(0)", ("X",)),
    ("mask = torch.tril(torch.ones(T, T))", ("T",)),
    ("scale = 1.0 / len(X) ** 0.5", ("X",)),
    ("total: float = float(X.abs().sum())", ("X",)),
    ("scratch = torch.zeros(64, 1024)", ()),  # only literals: a tensor made the same each step
])
def test_work_on_what_the_loop_never_changes_is_invariant(tmp_path: Path, stmt: str,
                                                          reads: tuple[str, ...]) -> None:
    assert _reads(tmp_path, stmt) == reads


@pytest.mark.parametrize("stmt, extra", [
    ("m = X[idx].mean(0)", ""),  # the loop assigns idx
    ("m = X.mean(0) * step", ""),  # the loop's own variable
    ("noise = torch.randn(8) * X.std()", ""),  # a new draw each step
    ("m = X.add_(1).mean()", ""),  # changes X in place
    ("norm = model.weight.norm()", ""),  # the loop calls model (and an optimizer would change it)
    ("m = stats(X)", "def stats(t):\n    return t.mean()\n"),  # a function of the script's
    ("m = X.mean(0)", "    augment(X)\n"),  # X handed to a call in the loop: it may change
    ("m = X.mean(0)", "    X = X * 0.9\n"),  # assigned in the loop
    ("w.mul_(0.5)", ""),  # not an assignment
    ("item = q.get()", ""),  # a method that takes from its object (a queue's next item)
    ("line = f.readline()", ""),
    ("mask = torch.ones(T, T)", "    mask[idx] = 0\n"),  # made afresh each step, then changed in place
    ("buf = X.clone()", "    buf.add_(1.0)\n"),
    ("acc = torch.zeros(8)", "    acc += xb.sum(0)\n"),
    ("s = X.std(0)", "    s = s * 2\n"),  # assigned again
    ("s = X.std(0)", "    keep(s)\n"),  # handed to a function of the script's
    ("total = 0", ""),  # a constant: nothing made
    ("order = torch.arange(T)", "    np.random.shuffle(order)\n"),  # shuffled in place each step
    ("s = X.numpy()", "    s.sort()\n"),  # a numpy array's sort is in place
])
def test_what_may_differ_from_step_to_step_is_not(tmp_path: Path, stmt: str, extra: str) -> None:
    assert _reads(tmp_path, stmt, extra) is None, stmt


def test_a_statement_outside_any_loop_or_an_unreadable_file_is_not(tmp_path: Path) -> None:
    path = tmp_path / "top.py"
    path.write_text("import torch\nX = torch.randn(4)\nm = X.mean()\n")
    assert invariant_reads(str(path), 3) is None
    assert invariant_reads(str(tmp_path / "missing.py"), 3) is None


DATASET = """import numpy as np
import torch


class Standardised(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y
        self.mean = x.mean(0)
        self.cache = {{}}
        self.epoch = 0

    def __getitem__(self, i):
        {stmt}
        return self.x[i], self.y[i]

    def set_epoch(self, epoch):
        self.epoch = epoch
        {other}
"""


def _sample_reads(tmp_path: Path, stmt: str, other: str = "pass") -> tuple[str, ...] | None:
    from gpubottle.analysis.invariant import sample_invariant

    path = tmp_path / f"ds{abs(hash(stmt + other))}.py"
    path.write_text(DATASET.format(stmt=stmt, other=other))
    linecache.checkcache(str(path))
    return sample_invariant(str(path), 13)


@pytest.mark.parametrize("stmt, reads", [
    ("mean, std = self.x.mean(axis=0), self.x.std(axis=0)", ("x",)),  # the whole array's statistics
    ("x = (self.x[i] - self.x.mean(0)) / self.x.std(0)", ("x",)),  # inside the sample's own math
    ("table = torch.tensor(self.y)", ("y",)),  # a conversion of all labels
    ("m = np.median(self.x, axis=0)", ("x",)),
    ("s = self.x.std(0) * self.epoch", ("x",)),  # the call is the work; the epoch scales its result
    ("w = self.x.astype(np.float32).std(0)", ("x",)),
])
def test_a_datasets_work_from_what_init_made_alone_is_the_same_every_sample(
        tmp_path: Path, stmt: str, reads: tuple[str, ...]) -> None:
    assert _sample_reads(tmp_path, stmt) == reads


@pytest.mark.parametrize("stmt, other", [
    ("m = self.x[i].mean()", "pass"),  # the sample's own row
    ("x = self.x[i] - self.mean.view(1, -1)", "pass"),  # a view of a value made once: no pass over data
    ("s = (self.x * self.epoch).std(0)", "pass"),  # set_epoch changes self.epoch
    ("s = self.x.std(0)", "self.x = self.x[::-1]"),  # another method replaces self.x
    ("s = self.x.std(0)", "np.random.shuffle(self.x)"),  # ...or shuffles it in place
    ("s = self.x.std(0)", "self.x.sort()"),  # ...or sorts it in place (a method that may change it)
    ("n = len(self.x)", "pass"),  # a builtin: costs nothing
    ("noise = np.random.normal(size=self.x.shape)", "pass"),  # a new draw each sample
    ("m = helper(self.x)", "pass"),  # a function of the script's may read anything
    ("s = self.x.std(0)", "reset(self)"),  # self handed to a call: anything may change
    ("m = self.cache.get(i)", "pass"),  # a lookup by the index
])
def test_what_may_differ_between_samples_is_not(tmp_path: Path, stmt: str, other: str) -> None:
    assert _sample_reads(tmp_path, stmt, other) is None, (stmt, other)


def test_only_a_method_taking_the_sample_counts(tmp_path: Path) -> None:
    """__init__ computes it once already; a function outside a class, or one with no argument but
    self (a property), is not per sample."""
    from gpubottle.analysis.invariant import sample_invariant

    path = tmp_path / "shapes.py"
    path.write_text("class D:\n    def __init__(self, x):\n        self.x = x\n"
                    "        self.m = self.x.mean(0)\n\n"
                    "    @property\n    def stats(self):\n        return self.x.std(0)\n\n\n"
                    "def collate(batch, x=None):\n    return x.mean(0)\n")
    linecache.checkcache(str(path))
    assert [sample_invariant(str(path), n) for n in (4, 8, 12)] == [None, None, None]


def test_the_loaders_hot_function_is_named_at_the_statement_the_same_every_sample() -> None:
    """The stacks of norm_in_getitem.py's workers (numpy's reductions under __getitem__'s two
    statistics lines, a few in its sample's own line): the hot function's kind is the work the same
    every sample, and it is named at the statement the fix moves to __init__, not at its def."""
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import Frame, ThreadSamples
    from gpubottle.analysis.work_kinds import SAMPLE_INVARIANT, remedy, wasted

    script = Path(__file__).parents[2] / "scripts" / "real_code" / "norm_in_getitem.py"
    lines = script.read_text().splitlines()
    at = {s.strip().split(" =", 1)[0]: n for n, s in enumerate(lines, 1) if " = self.x." in s}
    sample = next(n for n, s in enumerate(lines, 1) if "torch.from_numpy((self.x[i]" in s)
    site = "/venv/lib/python3.11/site-packages"
    worker = [Frame("_worker_loop", f"{site}/torch/utils/data/_utils/worker.py", 349),
              Frame("_MapDatasetFetcher.fetch", f"{site}/torch/utils/data/_utils/fetch.py", 55)]

    def in_numpy(line: int, fn: str) -> list[Frame]:
        return [*worker, Frame("Standardised.__getitem__", str(script), line),
                Frame(fn, f"{site}/numpy/_core/_methods.py", 120)]

    stacks = ([in_numpy(at["std"], "_std")] * 6 + [in_numpy(at["mean"], "_mean")] * 3
              + [[*worker, Frame("Standardised.__getitem__", str(script), sample)]])
    ev = stack_evidence({7: ThreadSamples(7, stacks)}, 1, {7}, None)
    [hot] = ev.worker_hot
    assert hot.kind == SAMPLE_INVARIANT and wasted(SAMPLE_INVARIANT), hot
    assert hot.location.endswith(f"norm_in_getitem.py:{at['std']}"), hot  # the statement most sampled
    assert "once in __init__" in str(remedy(SAMPLE_INVARIANT))


def test_a_value_a_librarys_function_reads_stays_invariant(tmp_path: Path) -> None:
    """Class weights made at every step and handed to F.cross_entropy: a library's function reads
    them and changes nothing; the same handed to a function of the script's may be changed."""
    use = "    loss = torch.nn.functional.cross_entropy(out, idx % 2, weight=w)\n"
    assert _reads(tmp_path, "w = X.mean(0).abs()", use) == ("X",)
    assert _reads(tmp_path, "w = X.mean(0).abs()", "    renorm(w)\n") is None


def test_a_folder_listed_for_every_sample_is_the_same_for_every_sample(tmp_path: Path) -> None:
    """`files = sorted(os.listdir(self.root))` in __getitem__ (a folder of 4,000 .npy files: 117 ms
    a batch of 64): the same listing each time, os.path.join of the same attribute beside it
    changing nothing; where a method removes from the folder (os.remove), not."""
    from gpubottle.analysis.invariant import sample_invariant

    body = ("import os\n\n\nclass Folder:\n    def __init__(self, root):\n        self.root = root\n\n"
            "    def __getitem__(self, i):\n        files = sorted(os.listdir(self.root))\n"
            "        return os.path.join(self.root, files[i])\n{other}")
    path = tmp_path / "folder.py"
    path.write_text(body.format(other=""))
    assert sample_invariant(str(path), 9) == ("root",)
    changed = tmp_path / "changed.py"
    changed.write_text(body.format(other="\n    def clean(self):\n        os.remove(self.root)\n"))
    assert sample_invariant(str(changed), 9) is None


@pytest.mark.parametrize(("stmt", "found"), [
    ("xb = torch.FloatTensor(X)[idx]", "torch.FloatTensor(X)"),
    ("xb = torch.from_numpy(X).float()[step:step + 4]", "torch.from_numpy(X).float()"),
    ("xb = X.float()[idx]", "X.float()"),
    ("xb = torch.tensor(X[idx])", None),  # indexed first: only the rows converted
    ("xb = torch.tensor(w)[0]", None),  # the index the same each step: invariant_reads' case
    ("xb = torch.tensor(idx)[0]", None),  # what it converts changes each step
    ("xb = model(X).float()[idx]", None),  # the model's output: not a conversion of fixed data
])
def test_a_whole_array_converted_each_step_then_indexed_is_found(tmp_path: Path, stmt: str,
                                                                 found: str | None) -> None:
    from gpubottle.analysis.invariant import invariant_conversion

    path = tmp_path / f"conv{abs(hash(stmt))}.py"
    path.write_text(LOOP.format(stmt=stmt))
    linecache.checkcache(str(path))
    assert invariant_conversion(str(path), 8) == found
