"""A run whose measured steps py-spy left without a main-thread sample says so (analysis/stacks.py:
unsampled_steps), instead of findings that name no function with nothing said. Seen on a compiled
model's 18-s run: py-spy's last chunk was never written, its samples ended at 15.2 s and the steps ran
from 13.6 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubottle.analysis.stacks import unsampled_steps
from gpubottle.wire import StackChunk, encode

START = 1000.0


def _chunks(tmp_path: Path, *spans: tuple[float, float, int], pid: int = 7) -> str:
    lines = [encode(StackChunk(f"chunk-{pid}-{i:04d}.speedscope.json", START + a, START + b, rate, pid))
             for i, (a, b, rate) in enumerate(spans)]
    (tmp_path / "chunks.jsonl").write_text("".join(x + "\n" for x in lines))
    return str(tmp_path)


@pytest.mark.unit
def test_steps_after_the_last_written_chunk_are_said_with_where_the_samples_end(tmp_path: Path):
    where = _chunks(tmp_path, (0.5, 15.2, 10))
    said = unsampled_steps(where, 7, (START + 13.6, START + 18.1), START)
    assert said is not None
    assert "13.6-18.1 s into the run" in said and "its samples end at 15.2 s" in said
    assert "nothing to go on" in said


@pytest.mark.unit
def test_no_chunk_at_all_is_said_and_steps_too_short_for_the_rate_are_not(tmp_path: Path):
    (tmp_path / "chunks.jsonl").write_text("")
    said = unsampled_steps(str(tmp_path), 7, (START + 3.0, START + 9.0), START)
    assert said is not None and "none of its chunks was written" in said
    # 0.6 s of steps at 2 samples a second, inside a chunk: no sample is no news.
    where = _chunks(tmp_path, (0.5, 15.2, 10), (15.2, 30.0, 2))
    assert unsampled_steps(where, 7, (START + 20.0, START + 20.6), START) is None
    # Covered by a chunk to their end: nothing lost to say.
    assert unsampled_steps(where, 7, (START + 16.0, START + 29.5), START) is None
    # Another process's chunks do not cover this one's steps.
    other = _chunks(tmp_path, (0.5, 30.0, 10), pid=8)
    assert unsampled_steps(other, 7, (START + 16.0, START + 29.5), START) is not None
