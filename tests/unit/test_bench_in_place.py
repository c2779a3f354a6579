"""benchmarks/in_place.py: a paired round's profiled steps after 15 s split by what gpubottle was
doing as each ran (hooked steps, a py-spy chunk sampling, the rest), each class against plain
python's steps in the same spans."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from in_place import split_round, summary  # noqa: E402


def _steps(t0: float, t1: float, step: float) -> list[float]:
    out, t = [], t0
    while t <= t1:
        out.append(round(t, 9))
        t += step
    return out


def _round(tmp_path: Path, hooked_slower: float, spy_slower: float, rest_slower: float) -> Path:
    """Plain at 10-ms steps from 0 to 45 s; the profiled run's blocks without hooks from 15 s in
    0.9-s blocks with 0.1 s hooked between them, a py-spy chunk from 20 to 25 s: its steps slower by
    the given shares in each."""
    run = tmp_path / "run"
    (run / "stacks").mkdir(parents=True)
    blocks = [(15.0 + k, 15.9 + k) for k in range(30)]
    (run / "events.jsonl").write_text("".join(json.dumps(["unhooked", a, b, 81, True, True, 10]) + "\n"
                                              for a, b in blocks) + '["end","completed",null,45.0]\n')
    (run / "stacks" / "chunks.jsonl").write_text(json.dumps(["chunk", "c.json", 20.0, 25.0, 1, 7]) + "\n")
    prof, t = [0.0], 0.0
    while t < 44.9:
        inside = any(a <= t < b for a, b in blocks)
        slower = (spy_slower if 20.0 <= t < 25.0 else rest_slower) if inside else hooked_slower
        t = round(t + 0.01 * (1 + slower), 9)
        prof.append(t)
    (tmp_path / "times.json").write_text(json.dumps({"launched": 0.0, "plain": _steps(0.0, 45.0, 0.01),
                                                     "gpubottle": prof}))
    return tmp_path


def test_each_class_reads_its_own_slowdown_against_plain_in_the_same_spans(tmp_path):
    kept = _round(tmp_path, hooked_slower=0.10, spy_slower=0.02, rest_slower=0.0)
    parts = split_round(json.loads((kept / "times.json").read_text()), kept / "run", 15.0)
    # (a step across a block's edge lands in the hooked class: hence the loose bounds there)
    assert parts["hooked"].cost == pytest.approx(0.10, abs=0.02)
    assert parts["py-spy"].cost == pytest.approx(0.02, abs=0.003)
    assert parts["rest"].cost == pytest.approx(0.0, abs=0.003)
    total = sum(p.seconds for p in parts.values())
    assert parts["hooked"].seconds / total == pytest.approx(0.1, abs=0.03)
    s = summary([parts])
    assert set(s) == {"hooked", "py-spy", "rest"}
    weighted = sum(v["cost"] * v["weight"] for v in s.values())
    assert weighted == pytest.approx(0.1 * 0.1 + 0.02 * 5 / 30, abs=0.004)  # about the round's cost


def test_a_run_without_blocks_or_chunks_is_all_rest(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text('["start",1,0.0,0.0]\n')
    times = {"launched": 0.0, "plain": _steps(0.0, 45.0, 0.01), "gpubottle": _steps(0.0, 45.0, 0.0101)}
    parts = split_round(times, run, 15.0)
    assert parts["hooked"].steps == parts["py-spy"].steps == 0
    assert parts["rest"].cost == pytest.approx(0.01, abs=0.002)
    assert parts["hooked"].cost is None  # too few steps to say
