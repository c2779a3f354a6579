"""Where a DataLoader setting's value comes from, read from a real calling frame and its source
file (no training: a stand-in DataLoader records what the probe would), and the fix said there."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from script_lines import line_of

from gpubottle.probes import knobs
from gpubottle.rules.post.terms import say

STANDIN = '''
import sys
from gpubottle.probes import knobs

class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, *a, **kw):
        self.sources = knobs.sources(sys._getframe(1), knobs.LOADER_KNOBS, "DataLoader")
'''


def _load(tmp: Path, body: str, argv: list[str] | None = None) -> Any:
    """Run `body` as a user's script (its own file, so its frames and source are real)."""
    (tmp / "standin.py").write_text(STANDIN)
    path = tmp / "train_user.py"
    path.write_text(textwrap.dedent(body))
    sys.path.insert(0, str(tmp))
    old = sys.argv
    sys.argv = ["train_user.py", *(argv or [])]
    try:
        spec = importlib.util.spec_from_file_location("train_user", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.argv = old
        sys.path.remove(str(tmp))
        sys.modules.pop("standin", None)


def _col(tmp: Path, line_text: str, value_text: str) -> int:
    """The column (UTF-8 bytes, as ast counts them) where `value_text` starts on the line holding
    `line_text`."""
    line = next(s for s in (tmp / "train_user.py").read_text().splitlines() if line_text in s)
    return len(line[:line.index(value_text)].encode())


def _line(tmp: Path, text: str) -> int:
    return line_of(tmp / "train_user.py", text)


@pytest.fixture(autouse=True)
def _argparse_watched():
    knobs.watch_argparse()
    yield
    knobs._OPTIONS.clear()
    knobs._tree.cache_clear()


def test_an_argparse_option_is_named_with_its_aliases_and_default(tmp_path: Path):
    m = _load(tmp_path, """
        import argparse
        from standin import DataLoader
        p = argparse.ArgumentParser()
        p.add_argument("-j", "--workers", default=0, type=int)
        args = p.parse_args()
        loader = DataLoader([1, 2], batch_size=8, num_workers=args.workers)
    """)
    src = m.loader.sources["num_workers"]
    assert src["kind"] == "option" and src["option"] == "--workers" and src["aliases"] == ["-j"]
    assert src["default"] == 0 and src["site"].endswith(f":{_line(tmp_path, 'add_argument')}")
    assert m.loader.sources["batch_size"]["kind"] == "literal"
    assert m.loader.sources["pin_memory"] == {"kind": "default",
                                              "site": m.loader.sources["pin_memory"]["site"]}
    how, where = say("num_workers", 13, src)
    assert how.startswith("run with --workers 13 (or -j 13)") and where == src["site"]


def test_variables_env_dataclass_dict_and_configurator_globals(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("NW", "2")
    m = _load(tmp_path, """
        import os
        from dataclasses import dataclass
        from standin import DataLoader

        num_workers = 0
        exec("pass  # configurator.py")  # nanoGPT: exec(open('configurator.py').read())

        @dataclass
        class Config:
            workers: int = 0
            batch: int = 32

        def build(cfg, conf):
            n = 4
            a = DataLoader([1], num_workers=n)
            b = DataLoader([1], num_workers=int(os.environ.get("NW", "0")))
            c = DataLoader([1], cfg.batch, num_workers=cfg.workers)
            d = DataLoader([1], num_workers=conf["data"]["workers"])
            return a, b, c, d

        loaders = build(Config(), {"data": {"workers": 1}})
        e = DataLoader([1], num_workers=num_workers)
    """)
    a, b, c, d = m.loaders
    assert a.sources["num_workers"]["kind"] == "variable" and a.sources["num_workers"]["name"] == "n"
    assert a.sources["num_workers"]["site"].endswith(f"train_user.py:{_line(tmp_path, 'n = 4')}")
    assert b.sources["num_workers"]["kind"] == "env" and b.sources["num_workers"]["name"] == "NW"
    assert c.sources["num_workers"]["kind"] == "dataclass"
    assert c.sources["num_workers"]["field"] == "workers"
    assert c.sources["num_workers"]["site"].endswith(f":{_line(tmp_path, 'workers: int = 0')}")
    assert c.sources["batch_size"]["field"] == "batch"  # passed positionally
    # a dict literal passed to the helper: the key's value where the caller writes it
    src = d.sources["num_workers"]
    assert (src["kind"], src["key"], src["col"]) == ("key", "data.workers", _col(tmp_path, "loaders = build(",
                                                                              "1}}"))
    assert d.sources["num_workers"]["site"].endswith(f":{_line(tmp_path, 'loaders = build(')}")
    assert m.e.sources["num_workers"]["kind"] == "global"
    assert say("num_workers", 8, m.e.sources["num_workers"])[0].startswith("run with --num_workers=8")


def test_an_omegaconf_key_is_a_hydra_style_override(tmp_path: Path):
    pytest.importorskip("omegaconf")
    m = _load(tmp_path, """
        from omegaconf import OmegaConf
        from standin import DataLoader
        cfg = OmegaConf.create({"data": {"num_workers": 0}})
        loader = DataLoader([1], num_workers=cfg.data.num_workers)
    """)
    src = m.loader.sources["num_workers"]
    assert src["kind"] == "config" and src["key"] == "data.num_workers" and src["cli"] is False
    assert say("num_workers", 13, src)[0] == "set data.num_workers to 13 in the config the script reads"
    assert say("num_workers", 13, {**src, "hydra": True})[0].startswith("override data.num_workers=13")
    # A script that merges its command line (OmegaConf.from_cli) takes the same override.
    (tmp_path / "cli").mkdir()
    m2 = _load(tmp_path / "cli", """
        from omegaconf import OmegaConf
        from standin import DataLoader
        cfg = OmegaConf.merge(OmegaConf.create({"data": {"num_workers": 0}}), OmegaConf.from_cli([]))
        loader = DataLoader([1], num_workers=cfg.data.num_workers)
    """)
    src2 = m2.loader.sources["num_workers"]
    assert src2["cli"] is True
    assert say("num_workers", 13, src2)[0].startswith("override data.num_workers=13 on the command line")


def test_a_call_that_is_not_the_loader_has_no_sources(tmp_path: Path):
    frame = sys._getframe()
    assert knobs.sources(frame, knobs.LOADER_KNOBS, "DataLoader") == {}
    assert isinstance(argparse.ArgumentParser, type)


def test_a_helper_that_builds_the_loader_is_followed_to_where_its_caller_writes_the_value(
        tmp_path: Path):
    """A project's loader factory: the value is a parameter (or a key of a dict parameter) of the
    helper, written by its caller: a config dict, an option, a literal argument, or the helper's
    own default. The fix said there, not at the helper's DataLoader(...) line."""
    m = _load(tmp_path, """
        import argparse
        from standin import DataLoader

        CONFIG = {"batch_size": 32, "num_workers": 0}

        def build_loader(dataset, cfg):
            return DataLoader(dataset, batch_size=cfg["batch_size"],
                              num_workers=cfg.get("num_workers", 0))

        def make(dataset, workers, batch=16):
            return DataLoader(dataset, batch_size=batch, num_workers=workers)

        class Data:
            def loader(self, workers):
                return make([1], workers)

        p = argparse.ArgumentParser()
        p.add_argument("--workers", default=0, type=int)
        args = p.parse_args()

        def main():
            return (build_loader([1], CONFIG), make([1], args.workers), make([1], 0, batch=8),
                    Data().loader(2))

        a, b, c, d = main()
    """)
    src = m.a.sources["num_workers"]
    assert src["kind"] == "key" and src["key"] == "num_workers"
    assert src["site"].endswith(f":{_line(tmp_path, 'CONFIG = {')}")
    assert say("num_workers", 7, src)[0].startswith("at ") and "set 'num_workers' to 7" in say(
        "num_workers", 7, src)[0]
    assert m.b.sources["num_workers"]["kind"] == "option"  # through the helper to --workers
    assert m.c.sources["num_workers"]["kind"] == "argument"
    assert m.c.sources["num_workers"]["site"].endswith(f":{_line(tmp_path, 'make([1], 0, batch=8)')}")
    assert m.c.sources["batch_size"]["kind"] == "argument"  # passed by keyword
    assert m.b.sources["batch_size"]["kind"] == "parameter"  # not passed: make's default
    assert m.b.sources["batch_size"]["site"].endswith(f":{_line(tmp_path, 'def make(')}")
    assert say("batch_size", 32, m.b.sources["batch_size"])[0].endswith(
        "make batch's default 32 (or pass batch=32 where the helper is called)")
    # two helpers deep, through a method: Data().loader(2) -> make([1], workers)
    assert m.d.sources["num_workers"]["kind"] == "argument"
    assert m.d.sources["num_workers"]["site"].endswith(f":{_line(tmp_path, 'Data().loader(2)')}")
