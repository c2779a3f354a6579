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
])
def test_what_may_differ_from_step_to_step_is_not(tmp_path: Path, stmt: str, extra: str) -> None:
    assert _reads(tmp_path, stmt, extra) is None, stmt


def test_a_statement_outside_any_loop_or_an_unreadable_file_is_not(tmp_path: Path) -> None:
    path = tmp_path / "top.py"
    path.write_text("import torch\nX = torch.randn(4)\nm = X.mean()\n")
    assert invariant_reads(str(path), 3) is None
    assert invariant_reads(str(tmp_path / "missing.py"), 3) is None
