"""analysis/collate_samples.py: a collate_fn's loop over the batch's samples is found where its work
for a sample is the same every epoch (a function of the file, or a class's __call__); not where it
draws at random, keeps something on self, loops over the batch's columns, or is not in the file."""

from __future__ import annotations

import linecache
from pathlib import Path

from gpubottle.analysis.collate_samples import sample_loop

TOKENIZING = """\
import re
import torch

VOCAB = {"a": 1}


def collate(batch):
    ids, labels = [], []
    for text, label in batch:
        ids.append(torch.tensor([VOCAB.get(t, 0) for t in re.findall(r"\\w+", text)]))
        labels.append(label)
    return torch.nn.utils.rnn.pad_sequence(ids, batch_first=True), torch.tensor(labels)


class Collator:
    def __init__(self, pad):
        self.pad = pad

    def __call__(self, samples):
        out = []
        for i, (x, y) in enumerate(samples):
            out.append(x.float() / 255)
        return torch.stack(out)
"""


def _file(tmp_path: Path, text: str, name: str = "train.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    linecache.checkcache(str(path))
    return str(path)


def _line(text: str, start: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if t.strip().startswith(start))


def test_a_collates_loop_over_its_samples_is_found_in_a_function_or_a_classs_call(tmp_path: Path) -> None:
    path = _file(tmp_path, TOKENIZING)
    found = sample_loop([path], "collate", None)
    assert found is not None and found.function == "collate"
    assert (found.site, found.header) == (f"{path}:{_line(TOKENIZING, 'for text, label')}",
                                          "for text, label in batch:")
    called = sample_loop(["elsewhere.py", path], "Collator", None)  # (a file that is not there: next)
    assert called is not None and called.function == "Collator.__call__"
    assert called.header == "for i, (x, y) in enumerate(samples):"


def test_a_draw_a_cache_on_self_the_batchs_columns_or_no_def_found_say_nothing(tmp_path: Path) -> None:
    drawn = TOKENIZING.replace("ids.append(torch.tensor(", "ids.append(torch.randperm(3) + torch.tensor(")
    assert sample_loop([_file(tmp_path, drawn, "drawn.py")], "collate", None) is None
    cached = TOKENIZING.replace("out.append(x.float() / 255)", "self.seen = x\n            out.append(x)")
    assert sample_loop([_file(tmp_path, cached, "cached.py")], "Collator", None) is None
    columns = TOKENIZING.replace("for text, label in batch:", "for text, label in zip(*batch):")
    assert sample_loop([_file(tmp_path, columns, "columns.py")], "collate", None) is None
    assert sample_loop([_file(tmp_path, TOKENIZING, "t.py")], "pad_collate", None) is None
    given = TOKENIZING.replace("def collate(batch):", "def collate(batch, tokenize=None):").replace(
        "re.findall(r\"\\w+\", text)", "tokenize(text)")
    assert sample_loop([_file(tmp_path, given, "given.py")], "collate", None) is None  # a callable passed in
