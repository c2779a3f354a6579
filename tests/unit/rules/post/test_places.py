"""A fix never points inside an installed library: evidence saved with a library's __getitem__ as
the dataset's place gets the user's DataLoader line instead (or no place)."""

from __future__ import annotations

from factories import evidence

from gpubottle.report import Finding, Fix
from gpubottle.rules.post.places import in_library, in_user_code

TORCH = ".venv/lib/python3.11/site-packages/torch/utils/data/dataset.py:205"


def test_library_places_are_told_from_the_users():
    assert in_library(TORCH) and in_library("/usr/lib/python3.11/json/decoder.py:337")
    assert not in_library("train.py:12") and not in_library("src/lib/data.py:3") and not in_library(None)


def test_a_fix_at_a_librarys_getitem_moves_to_the_loader_that_reads_it():
    ev = evidence()
    ev.loaders[0].dataset_getitem = TORCH
    found = [Finding("preprocessing-bound", "warning", 0.4, "waits",
                     fixes=[Fix("batched", where=TORCH), Fix("other", where="/usr/lib/python3.11/x.py:1"),
                            Fix("mine", where="train.py:7")])]
    [f] = in_user_code(found, ev)
    assert [x.where for x in f.fixes] == ["train.py:42", None, "train.py:7"]
