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
    for cached in (sites.is_user_file, sites._real_dir, sites._roots):
        cached.cache_clear()
    yield
    sites.is_user_file.cache_clear()


def test_resolved_is_realpath_with_each_folder_resolved_once(tmp_path, monkeypatch):
    """A census asks for every loaded module's file (~1900 with torch): resolving each folder once
    took the first census's container search from 66 to 36 ms. The same answers as realpath."""
    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg" / "a.py").write_text("")
    (tmp_path / "link").symlink_to(real)
    (real / "pkg" / "alias.py").symlink_to(real / "pkg" / "a.py")
    (real / "rel").symlink_to("pkg")
    monkeypatch.chdir(tmp_path)
    names = [f"{tmp_path}/link/pkg/a.py", f"{tmp_path}/link/pkg/alias.py", f"{tmp_path}/link/../x.py",
             f"{tmp_path}/real/rel/a.py", "link/pkg/a.py", "./link//pkg/./a.py", f"{tmp_path}/none/z.py",
             f"{tmp_path}/link", f"{tmp_path}/link/", "/", *(m.__file__ for m in (os, json, pytest))]
    assert [sites.resolved(n) for n in names] == [os.path.realpath(n) for n in names]
    calls = []
    lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p: calls.append(p) or lstat(p))
    (real / "pkg" / "b.py").write_text("")
    assert sites.resolved(f"{tmp_path}/link/pkg/b.py") == str(real / "pkg" / "b.py")
    assert calls == [f"{real}/pkg/b.py"]  # the folder known: the file's own lstat only


def test_library_and_own_files_are_not_the_users():
    assert sites.is_user_file(str(HERE))
    assert not sites.is_user_file(json.__file__)
    assert not sites.is_user_file(sites.__file__)
    assert not sites.is_user_file("<frozen importlib._bootstrap>")


def test_code_torch_compile_generated_is_not_the_users(monkeypatch, tmp_path):
    """Inductor writes its kernels' Python under /tmp/torchinductor_<user>: a start-up named at
    '/tmp/torchinductor_root/g5/cg5u....py:319' pointed the user at generated code."""
    monkeypatch.chdir("/tmp")
    assert not sites.is_user_file("/tmp/torchinductor_root/g5/cg5u6l7bq6qb6bpw.py")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    assert not sites.is_user_file(str(tmp_path / "cache" / "ab" / "kernel.py"))
    assert sites.is_user_file(str(tmp_path / "train.py"))
    # ...and its output code by its name wherever it lies (a run re-read without that variable set
    # named the compile's site as line 1743 of one)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    out = tmp_path / "ind1" / "jb" / "cjbffeymv5avxdph5lok7ssr34hgz73aymrs5ejsdvxinlflsplv.py"
    assert not sites.is_user_file(str(out))
    assert sites.is_user_file(str(tmp_path / "ab" / "cab_loader.py"))  # (a user's own c*.py)


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


def test_a_datasets_own_getitem_is_its_line_and_an_inherited_one_the_users_class_or_none():
    from torch.utils.data import Dataset, TensorDataset

    class Rows(TensorDataset):  # inherits torch's __getitem__
        pass

    class Mine(Dataset):
        def __getitem__(self, i):
            return i

    first = Mine.__getitem__.__code__.co_firstlineno
    assert sites.user_code_site(Mine.__getitem__, Mine).endswith(f"test_sites.py:{first}")
    assert sites.user_code_site(Rows.__getitem__, Rows).endswith(
        f"test_sites.py:{first - 4}")  # the `class Rows` line
    assert sites.user_code_site(TensorDataset.__getitem__, TensorDataset) is None


def test_a_notebook_cells_file_is_said_as_jupyter_shows_the_cell(monkeypatch):
    """IPython names the file it compiled each cell to (ipykernel: a hash in a temporary folder)
    and maps it to the cell's execution count: fixes say "cell [N], line M" from that map."""
    import linecache
    import sys
    import types

    cell = "/tmp/ipykernel_4242/2983741.py"
    shell = types.SimpleNamespace(compile=types.SimpleNamespace(_filename_map={cell: 7}))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setitem(linecache.cache, cell, (10, None, ["x = 1\n", "y = 2\n"], cell))
    assert sites.place(cell, 2) == "cell [7], line 2"
    assert sites.place(str(HERE), 3).endswith("test_sites.py:3")
    assert sites.notebook_cells() == {"7": "x = 1\ny = 2\n"}


def test_a_torn_frame_name_with_a_nul_is_nobodys_file() -> None:
    """Beside busy programs py-spy read a frame's file name torn, with a NUL in it: realpath raised
    'embedded null byte' and the run's whole account was lost (a generator-fed loop's report had
    no account). Such a name is not the user's."""
    from gpubottle.probes.sites import is_user_file

    assert is_user_file("/w/train\x00.py") is False
    # A bare name, no folder and no .py (py-spy's "repl" in "base_module", line 0, alone at a
    # stack's root: named in a run's start-up and its steps as the script's code)
    assert is_user_file("base_module") is False
    assert is_user_file("train.py") is True  # `python -c` imports from the working folder: relative


def test_a_line_that_calls_itertools_cycle_is_told_from_one_that_does_not() -> None:
    """The DataLoader's iter() hook reads its caller's line: itertools.cycle is C, so the user's
    line is the frame beneath torch's __iter__ (a comment or a name like recycle( is not a call)."""
    import itertools
    import sys

    from gpubottle.probes.sites import calls_cycle

    class Loader:
        def __iter__(self):
            seen.append(calls_cycle(sys._getframe(1)))
            return iter([1])

    seen: list[bool] = []
    next(itertools.cycle(Loader()))
    next(iter(Loader()))  # not itertools.cycle(...)
    recycle = iter
    next(recycle(Loader()))
    assert seen == [True, False, False]
    assert not calls_cycle(None)
