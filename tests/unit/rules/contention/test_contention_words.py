"""The cpu-contention rule's words: each sentence form once, from decisions built by hand (the rule
tests in test_rules.py assert the decisions)."""

from __future__ import annotations

from gpubottle.rules.contention import words
from gpubottle.rules.contention.decide import Contention, Outside, Threads


def test_other_programs_named_or_unattributed() -> None:
    named = Contention(2.0, outside=Outside(1.2, [{"name": "stress", "pid": 7, "cores": 1.1}]))
    assert words.summary(named) == "the run competes for CPU: other programs use the cores"
    assert words.facts(named)[0].text == ("processes outside this run use 1.2 of 2 cores: stress (pid 7, "
                                          "1.1 cores)")
    assert words.fixes(named)[0].text == ("stop or move the competing work (stress (pid 7, 1.1 cores)), "
                                          "or pin it to other cores")
    unnamed = Contention(2.0, outside=Outside(0.54, []))
    assert words.summary(unnamed) == ("the run competes for CPU: CPU busy outside the run's processes, "
                                      "by no named process")
    assert words.facts(unnamed)[0].text.endswith("samples): unattributed") and words.fixes(unnamed) == []


def test_threads_said_where_they_are_set() -> None:
    t = Threads(64, 2, "train.py:3", affinity=2, quota=None)
    d = Contention(2.0, threads=t)
    assert words.summary(d) == "the run competes for CPU: more torch threads than cores"
    assert words.facts(d)[0].text.startswith("torch computes with 64 threads (the script sets it at "
                                             "train.py:3) but only 2 cores are available (affinity 2, "
                                             "cgroup quota none)")
    (fix,) = words.fixes(d)
    assert fix.text == "use as many threads as cores: torch.set_num_threads(2)"
    assert fix.where == "train.py:3"
    assert fix.change == {"torch.set_num_threads": [64, 2]}
    t.site, t.env, t.env_names = None, {"OMP_NUM_THREADS": "64"}, ["MKL_NUM_THREADS", "OMP_NUM_THREADS"]
    assert "(from OMP_NUM_THREADS=64)" in words.facts(d)[0].text
    assert words.fixes(d)[0].text.startswith("use as many threads as cores: set MKL_NUM_THREADS and "
                                             "OMP_NUM_THREADS=2 where the job is launched")
    t.env, t.env_names = {}, []
    assert "(torch's default (it counts the machine's cores" in words.facts(d)[0].text
    assert words.fixes(d)[0].text.endswith("or OMP_NUM_THREADS=2 where the job is launched")


def test_busy_workers_beyond_the_cores() -> None:
    d = Contention(2.0, workers=8, workers_site="train.py:40")
    assert words.summary(d) == "the run competes for CPU: more busy DataLoader workers than cores"
    assert words.facts(d)[0].text == "8 DataLoader workers share 2 cores"
    (fix,) = words.fixes(d)
    assert fix.change == {"num_workers": [8, 2]} and "try it and compare" in fix.text


def test_threads_beyond_the_cores_other_programs_leave() -> None:
    outside = Outside(1.05, [{"name": "python3", "pid": 7, "cores": 0.55},
                             {"name": "python3", "pid": 8, "cores": 0.5}])
    d = Contention(2.0, outside=outside, threads=Threads(2, 1, None, left=0.95))
    assert words.summary(d) == ("the run competes for CPU: other programs use the cores; more torch "
                                "threads than the cores other programs leave")
    assert words.facts(d)[1].text == (
        "torch computes with 2 threads (torch's default (it counts the machine's cores, not the "
        "container's limit)) while other programs leave the run about 0.95 of its 2 cores: its "
        "threads wait for each other at every parallel op, spinning while those programs hold the "
        "cores")
    fix = words.fixes(d)[1]
    assert fix.text == (
        "while other programs hold the cores, compute on 1 thread(s): torch.set_num_threads(1) at "
        "the start of the script, or OMP_NUM_THREADS=1 (or OMP_WAIT_POLICY=PASSIVE: threads sleep "
        "instead of spinning) where the job is launched; once the cores are free again, fewer threads "
        "may be slower: try it and compare")
    assert fix.change == {"torch.set_num_threads": [2, 1]} and fix.expected is None
