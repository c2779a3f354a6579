"""A tensor built from a Python list at the user's line (`torch.tensor(xs)`, xs a list of numpy
arrays made in a collate: the whole of making each batch in a 4.5-ms step, 0.9 ms through
np.stack): read from the source, so the loader's hot function says what its time goes to; an array
or a tensor handed over whole is not such work."""

from __future__ import annotations

from pathlib import Path

from stack_frames import FORWARD, LOADER, TORCH

from gpubottle.analysis.list_tensor import list_tensor_arg
from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.stack_users import stack_evidence
from gpubottle.analysis.stacks import Frame, ThreadSamples
from gpubottle.analysis.work_kinds import LIST_TENSOR, remedy

SCRIPT = """import numpy as np
import torch


def collate(batch):
    xs = [b[0] for b in batch]
    ys = []
    for b in batch:
        ys.append(b[1])
    return torch.tensor(xs), torch.LongTensor(ys)


def whole(batch):
    arr = np.stack([b[0] for b in batch])
    return torch.tensor(arr), torch.as_tensor(
        [b[1] for b in batch])


def scalar(v):
    return torch.tensor(0.5) * v


rows = []
for step in range(10):
    rows.append(np.zeros(3))
    x = torch.tensor(rows)
"""


def test_the_list_a_tensor_is_built_from_is_read_from_the_source(tmp_path: Path) -> None:
    path = str(tmp_path / "collate.py")
    Path(path).write_text(SCRIPT)
    assert list_tensor_arg(path, 10) == "xs"  # a name bound to a comprehension (ys: appended to)
    assert list_tensor_arg(path, 16) == "[b[1] for b in batch]"  # a call over two lines
    assert list_tensor_arg(path, 15) == "[b[1] for b in batch]"  # beside torch.tensor(arr): an array
    assert list_tensor_arg(path, 20) is None  # a number, not a list
    assert list_tensor_arg(path, 26) == "rows"  # at the module's level, appended to in the loop
    assert list_tensor_arg(path, 6) is None  # no torch call on the line
    assert list_tensor_arg(str(tmp_path / "gone.py"), 10) is None


def test_an_array_handed_over_whole_is_no_list(tmp_path: Path) -> None:
    path = str(tmp_path / "whole.py")
    Path(path).write_text("import numpy as np, torch\n\ndef f(batch):\n"
                          "    arr = np.stack(batch)\n    return torch.tensor(arr)\n")
    assert list_tensor_arg(path, 5) is None


def test_a_collate_that_builds_tensors_from_lists_is_said_with_np_stack(tmp_path: Path) -> None:
    path = str(tmp_path / "collate.py")
    Path(path).write_text(SCRIPT)
    module = Frame("<module>", path, 30)
    runpy = Frame("_run_code", "<frozen runpy>", 88)  # the script as gpubottle runs it
    # torch.tensor is C: the user's line is the sample's last frame
    making = [runpy, module, *LOADER, Frame("collate", path, 10)]
    # A comprehension on such a line is its own Python work, not torch's reading of the list.
    comp = [*making, Frame("collate.<locals>.<listcomp>", path, 10)]
    stacks = [making] * 8 + [comp] * 2 + [[runpy, module, *FORWARD]] * 2
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    (top, listcomp) = ev.main_hot
    assert (top.function, top.kind, top.share) == ("collate", LIST_TENSOR, 0.8), top
    assert (listcomp.function, listcomp.kind) == ("collate.<locals>.<listcomp>", None), listcomp
    assert "torch.from_numpy(np.stack(xs))" in str(remedy(LIST_TENSOR))


def test_the_loops_own_line_building_a_tensor_from_a_list_is_named_by_its_kind(tmp_path: Path) -> None:
    path = str(tmp_path / "loop.py")
    Path(path).write_text(SCRIPT)
    stacks = [[Frame("<module>", path, 26)]] * 6 + [[Frame("<module>", path, 25), *FORWARD]] * 4
    (top, *_) = named_time(stacks)
    assert (top.function, top.kind) == ("x = torch.tensor(rows)", LIST_TENSOR), top


def test_a_list_its_own_comprehensions_build_is_said_with_whole_array_ops() -> None:
    from gpubottle.evidence import StackFrameShare
    from gpubottle.rules.input.fix_words import hot_text

    top = StackFrameShare("Decoded.__getitem__", "decode.py:15", 0.49, kind=LIST_TENSOR)
    text = hot_text(top, [], False, comprehensions=0.41)
    assert "np.stack" in text and "take another 41%: tensor ops on the whole array" in text, text
    assert "take another" not in hot_text(top, [], False, comprehensions=0.05)


REPLAY = """import random
import numpy as np
import torch
memory = []
model = torch.nn.Linear(4, 2)
for step in range(100):
    memory.append((np.zeros(4, dtype=np.float32), 1.0))
    batch = random.sample(memory, 1)
    states = torch.tensor([b[0] for b in batch])
    rewards = torch.tensor([b[1] for b in batch])
    out = model(states)
    loss = (out.sum(1) - rewards).pow(2).mean()
    loss.backward()
"""


def test_a_batch_built_on_several_lines_of_one_kind_is_said_as_one_that_feeds_the_model(
        tmp_path: Path) -> None:
    """A replay buffer's batch made by torch.tensor(list) on two of the loop's lines (states 40% of
    the samples, rewards 20%): one finding at the line with most, the other named beside it, their
    time together; it feeds the model (states -> model(states), rewards -> the loss), so it must run
    every step: never "call it every 10 steps" (said of a DQN's batch before)."""
    from gpubottle.analysis.loop_source import parsed

    path = str(tmp_path / "replay.py")
    Path(path).write_text(REPLAY)
    parsed.cache_clear()
    runpy = Frame("_run_code", "<frozen runpy>", 88)
    stacks = ([[runpy, Frame("<module>", path, 9)]] * 4 + [[runpy, Frame("<module>", path, 10)]] * 2
              + [[runpy, Frame("<module>", path, 11), *FORWARD]] * 4)
    (top, *_) = named_time(stacks)
    assert top.function == "states = torch.tensor([b[0] for b in batch]) (and line 10 like it)", top
    assert (top.kind, top.share, top.location) == (LIST_TENSOR, 0.6, f"{path}:9"), top
    assert top.feeds_model, top
    # A line with a few samples of that kind beside many of the first's is not said with it (py-spy
    # reads a frame's line torn now and then: a print's tensor formatting seen at the model call's)
    stacks = ([[runpy, Frame("<module>", path, 9)]] * 12 + [[runpy, Frame("<module>", path, 10)]] * 2
              + [[runpy, Frame("<module>", path, 11), *FORWARD]] * 4)
    (top, *_) = named_time(stacks)
    assert top.function == "states = torch.tensor([b[0] for b in batch])", top
    assert top.share == round(12 / 18, 4), top


def test_a_statement_is_named_by_a_kind_in_a_quarter_of_its_samples_or_more(tmp_path: Path) -> None:
    """A VAE's loss line (log_prob's math, a KL) whose samples checked a distribution's argument
    once in 12 is not "checking arguments"; a line whose samples show the kind in 2 of 8 is."""
    path = str(tmp_path / "loop.py")
    Path(path).write_text("import json\nfor step in range(10):\n    cfg = parse(text)\n")
    runpy = Frame("_run_code", "<frozen runpy>", 88)
    line = [runpy, Frame("<module>", path, 3)]
    import json

    parsing = [*line, Frame("JSONDecoder.decode", json.decoder.__file__, 337)]
    other = [*line, Frame("_sum", f"{TORCH}/../numpy/_core/_methods.py", 52)]
    forward = [[runpy, Frame("<module>", path, 2), *FORWARD]] * 4
    assert named_time([parsing] + [other] * 7 + forward) == []
    (top, *_) = named_time([parsing] * 2 + [other] * 6 + forward)
    assert (top.function, top.kind) == ("cfg = parse(text)", "parsing JSON (json.loads)"), top
