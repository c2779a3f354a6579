"""Which line names a sampled function (analysis/stack_shares.def_line), on a real file shaped like a
script: a model class above a module-level loop with a generator expression in it (its <module>
and <genexpr> samples were once named by the model's `def forward` line above them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubottle.analysis.stack_shares import def_line

SOURCE = '''\
class Net:
    def forward(self, x):
        return x


def outer(xs):
    def helper(v):
        return v * 2

    total = 0
    for v in xs:
        total += helper(v)
    return total


for step in range(3):
    l2 = sum(p * p for p in [1.0, 2.0])
    out = Net().forward(l2)
'''


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    return str(path)


def test_module_level_code_and_comprehensions_are_named_by_their_own_line(script: str):
    assert def_line(script, 17, "<module>") == 17
    assert def_line(script, 17, "<genexpr>") == 17



def test_a_comprehension_or_lambda_inside_a_function_is_that_function_s(script: str):
    """(a dataset's __init__ parsing its records in a list comprehension: named by its def)"""
    assert def_line(script, 12, "outer.<locals>.<genexpr>") == 6
    assert def_line(script, 3, "Net.forward.<locals>.<lambda>") == 2


def test_a_function_is_named_by_its_def_past_a_helper_nested_above_the_line(script: str):
    assert def_line(script, 3, "Net.forward") == 2
    assert def_line(script, 12, "outer") == 6
    assert def_line(script, 8, "outer.<locals>.helper") == 7


def test_without_a_name_or_a_def_of_that_name_the_nearest_def_names_it(script: str):
    assert def_line(script, 12) == 7
    assert def_line(script, 12, "wrapper") == 7
