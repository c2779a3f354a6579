"""A comprehension that indexes a tensor one element at a time (`torch.stack([X[j] for j in idx])`,
a batch built by hand in the loop: 21-30% of a 1.5-ms step, 3.1x a step as `X[idx]`): the stacks'
named time says its kind, whose remedy is the one index; the statement that repeats the same work
(analysis/invariant.py) is said by its own kind, on stacks named as py-spy names them."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.source_kinds import gather_kind
from gpubottle.analysis.stacks import Frame
from gpubottle.analysis.work_kinds import GATHER, INVARIANT, remedy

SCRIPT = """import torch
X, y = torch.randn(1000, 8), torch.randint(0, 2, (1000,))
model = torch.nn.Linear(8, 2)
for step in range(10):
    idx = torch.randperm(1000)[:32]
    xb = torch.stack([X[j] for j in idx])
    ys = [int(v) for v in y[:4]]
    scale = X.std(0)
    out = model(xb / scale)
"""
FORWARD = [Frame("Module._wrapped_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
                 1778)]


def test_a_comprehension_that_indexes_one_element_at_a_time_is_said_with_one_index(tmp_path: Path) -> None:
    path = tmp_path / "by_hand.py"
    path.write_text(SCRIPT)
    assert gather_kind(str(path), 6) == GATHER
    assert gather_kind(str(path), 7) is None  # a comprehension that is not an index by its values
    assert "X[idx]" in str(remedy(GATHER))
    module = Frame("<module>", str(path), 6)
    comp = Frame("<listcomp>", str(path), 6)
    stacks = [[module, comp]] * 7 + [[Frame("<module>", str(path), 9), *FORWARD]] * 3
    (top, *_) = named_time(stacks)
    assert (top.function, top.kind, top.share) == ("<listcomp>", GATHER, 0.7), top


def test_a_statement_that_repeats_the_same_work_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "stats.py"
    path.write_text(SCRIPT)
    stacks = [[Frame("<module>", str(path), 8)]] * 6 + [[Frame("<module>", str(path), 9), *FORWARD]] * 4
    (top, *_) = named_time(stacks)
    assert (top.function, top.kind, top.share) == ("scale = X.std(0)", INVARIANT, 0.6), top
    assert top.location.endswith("stats.py:8"), top
