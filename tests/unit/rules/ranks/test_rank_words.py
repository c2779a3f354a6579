"""The straggler finding's words: each sentence form once, from decisions built by hand (the rule
tests in test_rank_rules.py assert the decisions)."""

from __future__ import annotations

from gpubottle.evidence import RankEvidence
from gpubottle.rules.ranks import words
from gpubottle.rules.ranks.decide import Straggler


def _rank(rank: int, **kw: object) -> RankEvidence:
    return RankEvidence(rank=rank, file=f"rank{rank}", steps=20, **kw)  # type: ignore[arg-type]


def test_a_slower_step_and_its_workers() -> None:
    slow = _rank(1, mean_step_s=0.3, workers=2, workers_cores=1.8, worker_run_queue=0.4)
    d = Straggler(slow, 0.5, "step", [_rank(0, mean_step_s=0.15)], 2, "the loop waits for data 62%")
    assert words.straggler_summary(d) == ("rank 1 sets the pace of the 2 ranks, the others wait for it "
                                          "50% of each step: the loop waits for data 62%")
    why, step, workers = words.straggler_facts(d)
    assert why.text == "rank 1: the loop waits for data 62%"
    assert step.text == ("rank 1 takes 300.0 ms a step, 2.00x the median of the other ranks (150.0 ms)")
    assert (step.name, step.value) == ("straggler_lost", 0.5)
    assert workers.text == ("its 2 DataLoader worker(s) use 1.8 cores, waiting for a core 40% of the "
                            "time")
    assert words.straggler_fix(d).text.startswith("make rank 1 faster first")
    assert "`if rank == 1:`" in words.straggler_fix(d).text


def test_ranks_in_step_told_by_their_own_work() -> None:
    slow = _rank(0, mean_step_s=0.2, communication_share=0.1, communication_overlap=0.5)
    other = _rank(1, mean_step_s=0.2, input_share=0.05, busy_share=0.35)
    d = Straggler(slow, 0.5, "work", [other], 2, None)
    assert words.straggler_summary(d).endswith("the others wait for it 50% of each step")
    (work,) = words.straggler_facts(d)
    assert work.text == ("of each step, rank 0 spends communication 10% (50% of it under compute); "
                         "rank 1 input wait 5%, computing 35%: the other ranks wait for it at the "
                         "collectives the rest of their step")
