"""Which files are the user's: fixes point only at those."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpubottle.probes import sites

HERE = Path(__file__).resolve()


@pytest.fixture(autouse=True)
def _fresh_cache():
    sites.is_user_file.cache_clear()
    yield
    sites.is_user_file.cache_clear()


def test_library_and_own_files_are_not_the_users():
    assert sites.is_user_file(str(HERE))
    assert not sites.is_user_file(json.__file__)
    assert not sites.is_user_file(sites.__file__)
    assert not sites.is_user_file("<frozen importlib._bootstrap>")


def test_a_checkout_under_the_interpreters_folder_is_still_the_users(monkeypatch):
    # CI may clone the project below the prefix Python was installed in.
    monkeypatch.chdir(HERE.parent.parent)
    monkeypatch.setattr(sites, "_LIB_DIRS", (str(HERE.parent.parent.parent),))
    assert sites.is_user_file(str(HERE))


def test_the_standard_library_under_the_working_folder_is_not(monkeypatch):
    # A pyenv Python under the home directory, run from the home directory.
    monkeypatch.chdir(HERE.parent.parent)
    monkeypatch.setattr(sites, "_LIB_DIRS", (str(HERE.parent / "scripts"),))
    assert not sites.is_user_file(str(HERE.parent / "scripts" / "fake_gpu_leak.py"))
    assert sites.is_user_file(str(HERE))
    assert os.getcwd() == str(HERE.parent.parent)
