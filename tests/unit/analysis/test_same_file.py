"""A dataset that opens the same file again for every sample (a CSV read whole to take one line:
41 ms a batch of 64, 1.5 ms with the lines kept from __init__; a zip archive opened for each
member: 596 ms a batch, 4.7 ms opened once): read from the source, the path not depending on the
index; a file per sample (the path made from the index) is not this, and the loader's hot function
says the kind before the library's (np.load's remedy is about a file per sample)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from gpubottle.analysis.same_file import reads_own_part, same_file_opened
from gpubottle.analysis.stack_users import stack_evidence
from gpubottle.analysis.stacks import Frame, ThreadSamples
from gpubottle.analysis.work_kinds import SAME_FILE, remedy, wasted

SCRIPT = """import io, zipfile
import numpy as np


class Rows:
    def __getitem__(self, i):
        with open(self.path) as f:
            line = f.readlines()[i]
        vals = [float(v) for v in line.split(",")]
        return vals


class Zipped:
    def __getitem__(self, i):
        with zipfile.ZipFile(PATH) as z:
            x = np.load(io.BytesIO(z.read(f"s{i}.npy")))
        return x


class PerSample:
    def __getitem__(self, i):
        name = self.names[i]
        with open(name) as f:
            text = f.read()
        arr = np.load(self.files[i])
        return text, arr


class Whole:
    def __getitem__(self, idx):
        table = np.load(self.path)
        return table[idx]

    def helper(self):
        return np.loadtxt("cfg.txt")


def main():
    with open("log.jsonl", "w") as fh:
        for step in range(10):
            fh.write(str(step))


class Gzipped:
    def __getitem__(self, i):
        with gzip.open(self.files[i], "rb") as f:
            arr = np.load(io.BytesIO(f.read()))
        return arr


class Mapped:
    def __getitem__(self, i):
        mm = np.memmap(PATH, dtype=np.float32, mode="r", shape=(N, D))
        return mm[i]
"""
SITE = "/venv/lib/python3.11/site-packages"
STDLIB = sysconfig.get_paths()["stdlib"]  # (library frames: this interpreter's own standard library)
LOADER = [Frame("_BaseDataLoaderIter.__next__", f"{SITE}/torch/utils/data/dataloader.py", 733),
          Frame("_MapDatasetFetcher.fetch", f"{SITE}/torch/utils/data/_utils/fetch.py", 55)]


def test_a_path_that_does_not_depend_on_the_index_is_the_same_file_each_sample(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    Path(path).write_text(SCRIPT)
    assert same_file_opened(path, 7) == "open(self.path)"  # the with line
    assert same_file_opened(path, 8) == "open(self.path)"  # its body, reading the handle
    assert same_file_opened(path, 9) is None  # after the with: parsing, not reading
    assert same_file_opened(path, 15) == "zipfile.ZipFile(PATH)"
    assert same_file_opened(path, 16) == "zipfile.ZipFile(PATH)"
    assert same_file_opened(path, 31) == "np.load(self.path)"
    assert same_file_opened(path, 35) == 'np.loadtxt("cfg.txt")'
    # np.memmap made again for each sample (4.8 s -> 2.8 s with the map kept from __init__)
    assert same_file_opened(path, 53) == 'np.memmap(PATH, dtype=np.float32, mode="r", shape=(N, D))'


def test_a_file_per_sample_is_not(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    Path(path).write_text(SCRIPT)
    assert same_file_opened(path, 23) is None  # open(name), name = self.names[i]
    assert same_file_opened(path, 24) is None
    assert same_file_opened(path, 25) is None  # np.load(self.files[i])
    assert same_file_opened(str(tmp_path / "gone.py"), 7) is None
    assert same_file_opened(path, 41) is None  # a log file opened once around the training loop
    assert same_file_opened(path, 39) is None
    # a compressed file per sample, its contents loaded from memory: the handle carries the index
    assert same_file_opened(path, 46) is None
    assert same_file_opened(path, 47) is None


def test_the_loaders_hot_function_says_it_before_the_librarys_kind(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    Path(path).write_text(SCRIPT)
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 40)]
    zipped = [*runpy, *LOADER, Frame("Zipped.__getitem__", path, 15),
              Frame("ZipFile.__init__", f"{STDLIB}/zipfile.py", 1302),
              Frame("ZipFile._RealGetContents", f"{STDLIB}/zipfile.py", 1369)]
    loaded = [*runpy, *LOADER, Frame("Whole.__getitem__", path, 31),
              Frame("load", f"{SITE}/numpy/lib/_npyio_impl.py", 455)]
    ev = stack_evidence({1: ThreadSamples(1, [zipped] * 6 + [loaded] * 4)}, 1, set(), None)
    kinds = {h.function: h.kind for h in ev.main_hot}
    assert kinds == {"Zipped.__getitem__": SAME_FILE, "Whole.__getitem__": SAME_FILE}, kinds
    assert "only indexes" in str(remedy(SAME_FILE)) and wasted(SAME_FILE)


DATABASE = """import sqlite3


class Rows:
    def __getitem__(self, i):
        con = sqlite3.connect(self.db)
        x, y = con.execute("select x, y from rows where id = ?", (i,)).fetchone()
        con.close()
        return x, y


class Kept:
    def __getitem__(self, i):
        if self.con is None:
            self.con = sqlite3.connect(self.db)
        return self.con.execute("select x from rows where id = ?", (i,)).fetchone()


class Sharded:
    def __getitem__(self, i):
        con = sqlite3.connect(self.shards[i % 4])
        return con.execute("select x from rows where id = ?", (i,)).fetchone()
"""


def test_a_database_connected_to_for_every_sample_is_the_same_file_at_its_query(tmp_path: Path) -> None:
    """sqlite_rows.py's shape: connecting for each sample reads the file's schema again at the first
    query (24.8 s for 782 batches of 128 against 9.0 s with one connection kept), so the query's
    line, reading the handle, is the file's too; a connection kept on self, or one per shard picked
    by the index, is not."""
    path = str(tmp_path / "db.py")
    Path(path).write_text(DATABASE)
    assert same_file_opened(path, 6) == "sqlite3.connect(self.db)"
    assert same_file_opened(path, 7) == "sqlite3.connect(self.db)"  # the query, on that handle
    assert same_file_opened(path, 8) == "sqlite3.connect(self.db)"
    assert same_file_opened(path, 9) is None
    assert same_file_opened(path, 15) is None and same_file_opened(path, 16) is None  # kept on self
    assert same_file_opened(path, 21) is None and same_file_opened(path, 22) is None  # by the index
    assert "sqlite3 connection" in str(remedy(SAME_FILE))


OFFSETS = """import json


class Lines:
    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            rec = json.loads(f.readline())
        return rec["x"]


class Whole:
    def __getitem__(self, i):
        with open(self.path) as f:
            rec = json.load(f)[i]
        return rec
"""


def test_a_file_seeked_to_the_samples_own_part_is_named_for_the_work_on_what_it_read(tmp_path: Path) -> None:
    """A JSON-lines file opened for each sample and seeked to its offset (jsonl_dataset.py, 2026-12-
    02): the open ~5 us of a sample's ~40, json.loads 26 us; the loader's function was named
    "opening and reading the same file again" with the fix "keep their byte offsets to seek to",
    which it already did. The with line is still the file's; its body's parsing is parsing; a body
    that parses the whole file for one record (json.load(f)[i]) is the file's."""
    path = str(tmp_path / "data.py")
    Path(path).write_text(OFFSETS)
    assert same_file_opened(path, 8) == 'open(self.path, "rb")'
    assert reads_own_part(path, 8) and reads_own_part(path, 7)
    assert not reads_own_part(path, 6)  # the with line: the open itself
    assert not reads_own_part(path, 15) and same_file_opened(path, 15) == "open(self.path)"
    assert not reads_own_part(str(tmp_path / "data2.py"), 8)
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 40)]
    decode = [Frame("loads", f"{STDLIB}/json/__init__.py", 346),
              Frame("JSONDecoder.decode", f"{STDLIB}/json/decoder.py", 337)]
    parsing = [*runpy, *LOADER, Frame("Lines.__getitem__", path, 8), *decode]
    opening = [*runpy, *LOADER, Frame("Lines.__getitem__", path, 6)]
    whole = [*runpy, *LOADER, Frame("Whole.__getitem__", path, 15), *decode]
    ev = stack_evidence({1: ThreadSamples(1, [parsing] * 7 + [opening] * 2 + [whole] * 5)}, 1, set(), None)
    kinds = {h.function: h.kind for h in ev.main_hot}
    assert kinds == {"Lines.__getitem__": "parsing JSON (json.loads)", "Whole.__getitem__": SAME_FILE}, kinds


SCANNED = """import json


class Lines:
    def __getitem__(self, i):
        with open(self.path) as f:
            for j, line in enumerate(f):
                if j == i:
                    rec = json.loads(line)
                    break
        return rec


def main(path):
    with open("log.txt", "w") as fh:
        for step in range(10):
            fh.write(str(step))
"""


def test_a_file_run_through_to_the_samples_line_is_read_whole_for_every_sample(tmp_path: Path) -> None:
    """jsonl_reread's shape: a JSON-lines file opened in __getitem__ and run through to line i, the
    loop's header 74% of the loader's time, iterating in C with no frame beneath it (the dataset
    3.9 s -> 2.9 s with the lines kept from __init__): the for line is the dataset's own work, not
    the loader's machinery pulling a batch, and its kind is the same file read again."""
    path = str(tmp_path / "data.py")
    Path(path).write_text(SCANNED)
    assert same_file_opened(path, 7) == "open(self.path)"  # the loop's header, reading the handle
    assert same_file_opened(path, 17) is None  # a log file written in a loop: opened once
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 20)]
    scan = [*runpy, *LOADER, Frame("Lines.__getitem__", path, 7)]
    parse = [*runpy, *LOADER, Frame("Lines.__getitem__", path, 9),
             Frame("loads", f"{STDLIB}/json/__init__.py", 346)]
    ev = stack_evidence({1: ThreadSamples(1, [scan] * 7 + [parse] * 3)}, 1, set(), None)
    assert [(h.function, round(h.share, 2), h.kind) for h in ev.main_hot] == \
        [("Lines.__getitem__", 1.0, SAME_FILE)], ev.main_hot
