"""The paired benchmark's rate after 15 s (benchmarks/paired.py): whole steps over their own span,
so a run of long steps is not off by a step's share at each end of the window."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from paired import _rate  # noqa: E402


def test_long_steps_at_the_same_pace_read_the_same_rate_wherever_they_fall():
    """Two runs of 0.45-s steps at the same pace, one started 0.4 s later: a count over the window
    read them 2 steps in 30 apart (~1.5% each way); whole steps over their span read them alike."""
    a = [0.05 + 0.45 * i for i in range(120)]
    b = [t + 0.4 for t in a]
    assert _rate(a, 15.0, 45.0) == pytest.approx(1 / 0.45)
    assert _rate(b, 15.0, 45.0) == pytest.approx(1 / 0.45)
    slower = [0.05 + 0.46 * i for i in range(120)]
    assert _rate(slower, 15.0, 45.0) / _rate(a, 15.0, 45.0) == pytest.approx(0.45 / 0.46)


def test_too_few_steps_have_no_rate():
    assert _rate([1.0, 20.0], 15.0, 45.0) == 0.0
    assert _rate([], 15.0, 45.0) == 0.0


def test_a_goal_is_met_missed_or_left_unresolved_by_the_interval():
    """make bench's verdict on a goal: the interval decides, and an interval across the goal says
    how many pairs of rounds would resolve it (this session's memory case: median -0.02%, 95%
    -0.56 .. +2.47 at 4 pairs against 1%: unresolved, the median under it)."""
    from bench_heavy import goal_verdict

    def d(median: float, low: float, high: float) -> dict[str, float]:
        return {"median": median, "low": low, "high": high, "pairs": 4}

    assert goal_verdict(d(0.003, -0.002, 0.008), 0.01) == "MET"
    assert goal_verdict(d(0.03, 0.02, 0.04), 0.01) == "NOT MET"
    memory = goal_verdict(d(-0.0002, -0.0056, 0.0247), 0.01)
    assert memory.startswith("not resolved (the median under it") and "~9 pairs" in memory, memory
    assert "median over it" in goal_verdict(d(0.0274, 0.0181, 0.0470), 0.02)
    assert goal_verdict(d(0.01, 0.0, 0.02), 0.01) == "not resolved (the median sits on the goal)"
    one = {"median": 0.003, "low": 0.003, "high": 0.003, "pairs": 1}  # (a 2-round smoke run)
    assert goal_verdict(one, 0.01).startswith("not resolved (one pair of rounds has no interval")
    assert goal_verdict({**one, "median": 0.05, "low": 0.05, "high": 0.05}, 0.01).startswith("not resolved")


def test_side_env_goes_to_the_side_named():
    """--side-env: a temporary switch on one side only, by paired()'s names for the two sides."""
    from bench_heavy import side_envs

    got = side_envs(["measured:GPUBOTTLE_X=1", "baseline:A=b=c", "measured:Y="])
    assert got == {"gpubottle": {"GPUBOTTLE_X": "1", "Y": ""}, "plain": {"A": "b=c"}}
    for bad in ("GPUBOTTLE_X=1", "both:X=1", "measured:X", "measured:=1"):
        with pytest.raises(ValueError, match="SIDE:NAME=VALUE"):
            side_envs([bad])


def test_trading_halves_re_pins_every_thread_of_the_tree():
    """The paired rounds' trade (paired._trade of paired._threads): a process, the process it
    started and their threads all land on the half named, the later-started inheriting it."""
    import os
    import subprocess
    import time

    from paired import _threads, _trade, _tree

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs two cores")
    # A parent with a thread that starts a child with a thread; both wait on stdin.
    wait = "import subprocess,sys,threading; threading.Thread(target=sys.stdin.read, daemon=True).start(); "
    child = wait + "sys.stdin.read()"
    parent = (wait + f"p=subprocess.Popen([sys.executable,'-c',{child!r}]); sys.stdin.read(); p.kill()")
    proc = subprocess.Popen([sys.executable, "-c", parent], stdin=subprocess.PIPE)
    tree: list[int] = [proc.pid]

    def threads() -> list[int]:
        return [int(t) for p in tree for t in os.listdir(f"/proc/{p}/task")]

    try:
        deadline = time.monotonic() + 20
        while (len(tree) < 2 or len(threads()) < 4) and time.monotonic() < deadline:
            time.sleep(0.05)
            tree = _tree(proc.pid)
        assert len(tree) == 2 and len(threads()) >= 4
        for want in ([cores[1]], [cores[0]]):
            _trade([(_threads(proc.pid), want)])
            assert all(os.sched_getaffinity(t) == set(want) for t in threads())
    finally:
        for p in reversed(tree):
            os.kill(p, 9)
        proc.wait()


def test_the_tree_moved_first_alternates_from_one_trade_to_the_next():
    """Moved first at every trade, the tree started first ran ~1.5% faster all round."""
    import os

    from paired import _moves

    live = [("plain", os.getpid()), ("gpubottle", os.getppid())]
    held = {"plain": [0], "gpubottle": [1]}
    firsts = [_moves(live, held, n)[0][1] for n in range(4)]
    assert firsts == [[0], [1], [0], [1]]
    assert all(len(m) == 2 and m[0][0] for m in (_moves(live, held, n) for n in range(2)))


_LOG = """steady: plain python and gpubottle run side by side, 4 rounds of benchmarks/busy_loop.py
  round 1/4: plain 5153 steps, gpubottle 5087; cost after 15 s +0.70%, whole run +1.09%; its account 0.98%
  round 2/4: plain 5255 steps, gpubottle 5194; cost after 15 s +0.50%, whole run +1.11%; its account 0.74%
  round 3/4: plain 4887 steps, gpubottle 4842; cost after 15 s -0.10%, whole run +0.83%; its account 0.75%
  round 4/4: plain 4887 steps, gpubottle 4842; cost after 15 s +0.30%, whole run +0.83%; its account 0.75%
   after 15 s: ...
threads: plain python and gpubottle run side by side, 2 rounds of benchmarks/many_threads.py
  round 1/2: plain 13022 steps, gpubottle 12735; cost after 15 s +1.52%, whole run +2.35%; its account 0.89%
"""


def test_series_of_one_case_pool_their_pairs_each_paired_within_its_own_series():
    """benchmarks/pool.py: a log's rounds of the case asked for (not the next case's), paired in
    order within each series; two series' pairs together."""
    from pool import pooled, series

    found = series(_LOG, "steady")
    assert found is not None and found[0].startswith("steady: ")
    rounds = found[1]
    assert [r[0] for r in rounds] == pytest.approx([0.007, 0.005, -0.001, 0.003])
    assert series(_LOG, "memory") is None
    p = pooled([rounds, rounds[:3]])  # the second series' odd last round is left out
    assert p["after"]["pairs"] == 3
    assert p["after"]["median"] == pytest.approx(0.006)  # pairs 0.6, 0.1, 0.6 (%)
    assert p["account"]["median"] == pytest.approx(0.0075)


def test_guest_pages_left_alone_where_there_is_no_reporting_to_turn_off(tmp_path, monkeypatch):
    """benchmarks/guest_pages.py on a machine without the page_reporting module: it says so,
    yields False and writes nothing."""
    import guest_pages

    monkeypatch.setattr(guest_pages, "ORDER", tmp_path / "absent" / "page_reporting_order")
    said: list[str] = []
    with guest_pages.held_guest_pages(said.append) as held:
        assert held is False
    assert len(said) == 1 and "left as it is" in said[0], said
    assert not (tmp_path / "absent").exists()


def _steady(step: float, t1: float = 45.0) -> list[float]:
    out, t = [], 2.0
    while t < t1:
        t += step
        out.append(t)
    return out


def test_a_round_whose_runs_stay_apart_all_through_is_marked_with_its_size_and_side():
    """Runs whose paces differ all round (a pace set at launch) are told from a round whose
    windows cross: 4% slower in every window reads +4%; the other side slower reads negative."""
    from paired import apart

    plain, slow = _steady(0.015), _steady(0.015 * 1.04)
    assert apart(plain, slow, 17.0, 44.0) == pytest.approx(0.04, abs=0.002)
    assert apart(slow, plain, 17.0, 44.0) == pytest.approx(1 / 1.04 - 1, abs=0.002)


def test_rounds_within_the_margin_or_crossing_it_are_not_marked():
    from paired import apart

    plain = _steady(0.015)
    assert apart(plain, _steady(0.015 * 1.01), 17.0, 44.0) is None  # one sign, under 2%
    # 4% slower in the first half, 4% faster in the second: windows of both signs
    mixed = [t for t in _steady(0.015 * 1.04) if t <= 30.0]
    while mixed[-1] < 45.0:
        mixed.append(mixed[-1] + 0.015 / 1.04)
    assert apart(plain, mixed, 17.0, 44.0) is None
    assert apart(plain, [20.0, 21.0], 17.0, 44.0) is None  # a window without steps
