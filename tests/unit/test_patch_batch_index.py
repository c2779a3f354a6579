"""The patch that indexes whole batches (patches.batch_index_edits): the DataLoader call rewritten
in real files, and the rewritten call run by real torch to the batches the script asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gpubottle.patches import _apply, batch_index_edits

HEAD = "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"


def _patched(tmp_path: Path, call: str) -> str:
    path = tmp_path / "train.py"
    path.write_text(HEAD + call + "\n")
    line = len((HEAD + call).splitlines())
    edits = batch_index_edits(f"{path}:{line}", str(tmp_path))
    assert not isinstance(edits, str), edits
    return _apply(path.read_text(), edits).splitlines()[line - 1]


@pytest.mark.parametrize("call, want", [
    ("loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True)",
     "loader = DataLoader(ds, batch_size=None, sampler=torch.utils.data.BatchSampler("
     "torch.utils.data.RandomSampler(ds), args.batch_size, drop_last=False))"),
    ("loader = DataLoader(ds, 64, drop_last=True, shuffle=False)",
     "loader = DataLoader(ds, None, sampler=torch.utils.data.BatchSampler("
     "torch.utils.data.SequentialSampler(ds), 64, drop_last=True))"),
    ("loader = DataLoader(dataset=train_ds, shuffle=flag, batch_size=8, num_workers=0)",
     "loader = DataLoader(dataset=train_ds, batch_size=None, num_workers=0, sampler=torch.utils.data."
     "BatchSampler((torch.utils.data.RandomSampler(train_ds) if flag else torch.utils.data."
     "SequentialSampler(train_ds)), 8, drop_last=False))"),
    ("loader = DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True, num_workers=4)",
     "loader = DataLoader((dataset := TensorDataset(x, y)), batch_size=None, num_workers=4, sampler=torch."
     "utils.data.BatchSampler(torch.utils.data.RandomSampler(dataset), 256, drop_last=False))"),
    ("dataset = 1\nloader = DataLoader(TensorDataset(x), 4)",
     "loader = DataLoader((data_set := TensorDataset(x)), None, sampler=torch.utils.data.BatchSampler("
     "torch.utils.data.SequentialSampler(data_set), 4, drop_last=False))"),
    # (the script's own sampler= still draws the indices; the dataset built in the call needs no name)
    ("loader = DataLoader(TensorDataset(x, y), batch_size=256, sampler=sampler)",
     "loader = DataLoader(TensorDataset(x, y), batch_size=None, sampler=torch.utils.data.BatchSampler("
     "sampler, 256, drop_last=False))"),
    ("loader = DataLoader(ds, batch_sampler=sampler)",
     "loader = DataLoader(ds, batch_size=None, sampler=sampler)"),
    ("loader = DataLoader(ds)",
     "loader = DataLoader(ds, batch_size=None, sampler=torch.utils.data.BatchSampler("
     "torch.utils.data.SequentialSampler(ds), 1, drop_last=False))"),
])
def test_the_call_is_rewritten_in_the_scripts_own_terms(tmp_path: Path, call: str, want: str) -> None:
    assert _patched(tmp_path, call) == want


def test_the_rewritten_call_runs_and_gives_whole_batches(tmp_path: Path) -> None:
    line = _patched(tmp_path, "loader = DataLoader(ds, batch_size=4, shuffle=True, drop_last=True)")
    scope = {"ds": torch.utils.data.TensorDataset(torch.arange(10))}
    exec(HEAD + line, scope)  # noqa: S102 - the patched line, as the user's script would run it
    batches = [b[0].tolist() for b in scope["loader"]]
    assert [len(b) for b in batches] == [4, 4] and len(set(sum(batches, []))) == 8


def test_a_batch_sampler_moved_to_sampler_runs_and_gives_whole_batches(tmp_path: Path) -> None:
    """The script's own names kept (no `import torch` needed): batch_sampler=X -> batch_size=None,
    sampler=X, over two lines as written."""
    path = tmp_path / "train.py"
    path.write_text("from torch.utils.data import BatchSampler, DataLoader, RandomSampler\n"
                    "loader = DataLoader(ds, batch_sampler=BatchSampler(RandomSampler(ds), 4,\n"
                    "                                                  drop_last=True))\n")
    edits = batch_index_edits(f"{path}:2", str(tmp_path))
    assert not isinstance(edits, str), edits
    text = _apply(path.read_text(), edits)
    assert "DataLoader(ds, batch_size=None, sampler=BatchSampler(RandomSampler(ds), 4,\n" in text, text
    scope = {"ds": torch.utils.data.TensorDataset(torch.arange(10))}
    exec(text, scope)  # noqa: S102 - the patched file, as the user's script would run it
    batches = [b[0].tolist() for b in scope["loader"]]
    assert [len(b) for b in batches] == [4, 4] and len(set(sum(batches, []))) == 8


def test_calls_it_cannot_rewrite_are_said_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(HEAD + "loader = DataLoader(ds, 4, True)\n")  # shuffle by position
    assert "by position" in str(batch_index_edits(f"{path}:3", str(tmp_path)))
    path.write_text("from torch.utils.data import DataLoader\n\nloader = DataLoader(ds, 4)\n")
    assert "does not `import torch`" in str(batch_index_edits(f"{path}:3", str(tmp_path)))
    assert "not found" in str(batch_index_edits(f"{path}:1", str(tmp_path)))
