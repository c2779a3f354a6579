"""Where a stack sample belongs when py-spy's clock is late. py-spy samples at random (Poisson)
times and writes each sample's time when its own main thread takes it in; at nice 10 on a busy
machine that came 30-100 ms after the sample. So: a stack seen is held from the sample that saw it
(not up to an interval later), an evaluation's samples are told by their stacks, and a fetch's
samples are the fetch wherever their times fall."""

from __future__ import annotations

import json
from pathlib import Path

from gpubottle.analysis.stacks import Frame, ThreadSamples, fetching_sample, without_evaluations
from gpubottle.collect.stack_chunks import chrometrace_to_evented, read_evented

ROOT = "thread (4242): MainThread"


def _timeline(tmp_path: Path, changes: list[tuple[int, list[str]]], end_us: int):
    """Chrometrace events as py-spy writes them: B/E at the sample that saw a change."""
    events: list[dict] = [{"ph": "B", "name": ROOT, "tid": 1, "ts": changes[0][0]}]
    prev: list[str] = []
    for ts, stack in changes:
        keep = 0
        while keep < min(len(prev), len(stack)) and prev[keep] == stack[keep]:
            keep += 1
        events += [{"ph": "E", "name": n, "tid": 1, "ts": ts, "args": {"filename": "t.py", "line": 1}}
                   for n in reversed(prev[keep:])]
        events += [{"ph": "B", "name": n, "tid": 1, "ts": ts, "args": {"filename": "t.py", "line": 1}}
                   for n in stack[keep:]]
        prev = stack
    events += [{"ph": "E", "name": n, "tid": 1, "ts": end_us, "args": {"filename": "t.py", "line": 1}}
               for n in reversed(prev)]
    events.append({"ph": "E", "name": ROOT, "tid": 1, "ts": end_us})
    raw, dest = tmp_path / "raw.json", tmp_path / "c.speedscope.json"
    raw.write_text(json.dumps(events))
    assert chrometrace_to_evented(str(raw), str(dest), 4242)
    frames, [tl] = read_evented(str(dest))
    return frames, tl


def test_a_stack_is_held_from_the_sample_that_saw_it(tmp_path: Path):
    # Sampled every 0.1 s: "a" seen at 0.05 s, "b" at 0.42 s, until 0.75 s.
    frames, tl = _timeline(tmp_path, [(50_000, ["main", "a"]), (420_000, ["main", "b"])], 750_000)
    got = [(round(t, 2), frames[st[-1]]["name"]) for t, st in tl.samples(0.1)]
    assert got == [(0.05, "a"), (0.15, "a"), (0.25, "a"), (0.35, "a"),
                   (0.42, "b"), (0.52, "b"), (0.62, "b"), (0.72, "b")]
    # A stack seen by one sample only keeps that sample (a grid from the chunk's start had none).
    frames, tl = _timeline(tmp_path, [(0, ["main", "a"]), (230_000, ["main", "c"]),
                                      (260_000, ["main", "a"])], 400_000)
    names = [frames[st[-1]]["name"] for _, st in tl.samples(0.1)]
    assert names.count("c") == 1


def _f(name: str, file: str, line: int) -> Frame:
    return Frame(name, file, line)


def test_an_evaluations_samples_are_told_by_their_stacks_not_their_times():
    run = _f("<module>", "/w/train.py", 40)
    evaluate_iter = [run, _f("evaluate", "/w/train.py", 23),
                     _f("_BaseDataLoaderIter.__next__", "/v/torch/utils/data/dataloader.py", 733)]
    module = _f("Module._call_impl", "/v/torch/nn/modules/module.py", 1)
    evaluate_fwd = [run, _f("evaluate", "/w/train.py", 24), module]
    train_fetch = [_f("<module>", "/w/train.py", 31),
                   _f("_BaseDataLoaderIter.__next__", "/v/torch/utils/data/dataloader.py", 733)]
    inline = [_f("<module>", "/w/train.py", 36), module]
    ts = ThreadSamples(1, [evaluate_iter, evaluate_fwd, train_fetch, inline], [1.0, 2.0, 3.0, 4.0])
    out = without_evaluations({1: ts}, {"train.py:23"}, {"train.py:31"})[1]
    assert out.stacks == [train_fetch, inline] and out.times == [3.0, 4.0]
    # An evaluation written inline in the training's own function: only its loop's line is its.
    inline_eval = [_f("<module>", "/w/train.py", 35),
                   _f("_BaseDataLoaderIter.__next__", "/v/torch/utils/data/dataloader.py", 733)]
    ts = ThreadSamples(1, [inline_eval, train_fetch, inline], [1.0, 2.0, 3.0])
    out = without_evaluations({1: ts}, {"train.py:35"}, {"train.py:31"})[1]
    assert out.stacks == [train_fetch, inline]
    assert fetching_sample(train_fetch) and not fetching_sample(inline)
    starting = [_f("<module>", "/w/train.py", 31),
                _f("DataLoader.__iter__", "/v/torch/utils/data/dataloader.py", 1)]
    assert not fetching_sample(starting)  # iter(): the stacks' to see, no fetch timed it
