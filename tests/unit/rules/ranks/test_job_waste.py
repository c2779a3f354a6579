"""The waste only a job has (rules/ranks): ranks that each iterate the whole dataset, ranks that
take different numbers of steps, and a single rank's own report that says it is one."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import JobInfo, RankEvidence
from gpubottle.evidence.account import AccountEntry
from gpubottle.rules import diagnose
from gpubottle.rules.ranks import words
from gpubottle.rules.ranks.decide import decide_uneven, decide_unsharded


def _job_ev(split: bool | None, world: int | None = 2, epochs: bool = True):
    ev = evidence(steps=60, step_s=0.05)
    lo = ev.loaders[0]
    lo.sampler, lo.rank_split, lo.world, lo.dataset_len = "RandomSampler", split, world, 960
    if epochs:
        lo.epoch_batches = [30, 30]
    ev.run.stop_reason = "completed"
    ev.run.duration_s = 10.0
    ev.account = [AccountEntry(phase="startup", seconds=3.0, share=0.3),
                  AccountEntry(phase="train", seconds=6.0, share=0.6),
                  AccountEntry(phase="teardown", seconds=1.0, share=0.1)]
    return ev


def test_a_sampler_that_does_not_split_by_rank_is_unsharded_data():
    d = decide_unsharded(_job_ev(False))
    assert d is not None and d.world == 2 and d.epoch_batches == 30 and d.whole_epochs
    rep = diagnose(_job_ev(False))
    f = next(f for f in rep.findings if f.category == v.UNSHARDED_DATA)
    assert f.run_share == 0.3 and f.severity == "warning"  # half of 6 s of training, of a 10 s run
    fix = f.fixes[0]
    assert "DistributedSampler(dataset)" in fix.text and "set_epoch" in fix.text
    assert fix.where == "train.py:42"
    assert fix.expected_run_s == 7.0  # 10 s less half the training
    assert rep.findings[0].category == v.UNSHARDED_DATA  # it costs the run more than the step's verdict


def test_no_finding_where_each_rank_has_its_share_or_it_cannot_be_told():
    assert decide_unsharded(_job_ev(True)) is None
    assert decide_unsharded(_job_ev(None)) is None  # an IterableDataset whose source was unreadable
    assert decide_unsharded(_job_ev(False, world=None)) is None  # not a job
    ev = _job_ev(False, world=None)
    ev.run.job = JobInfo(rank=0, world_size=4, job_id="812")  # a rank a cluster's launcher started
    d = decide_unsharded(ev)
    assert d is not None and d.world == 4
    # (no process group where that loader was built: the sampler is given the world and the rank,
    # without which DistributedSampler asks torch.distributed for them and raises)
    assert "DistributedSampler(dataset, num_replicas=4, rank=rank)" in words.unsharded_fix(d, 10.0).text


def test_a_run_of_fixed_steps_gets_no_run_time_promise():
    ev = _job_ev(False, epochs=False)
    ev.run.stop_reason = "steps"
    d = decide_unsharded(ev)
    assert d is not None and not d.whole_epochs
    fix = words.unsharded_fix(d, 10.0)
    assert fix.expected_run_s is None and "sees each sample once instead of 2 times" in fix.text


def test_unsharded_words():
    d = decide_unsharded(_job_ev(False))
    assert d is not None
    assert words.unsharded_summary(d) == (
        "every rank of the 2-rank job iterates the whole dataset: each sample is trained on 2 times "
        "an epoch, and an epoch takes 2x the steps it needs")
    facts = words.unsharded_facts(d)
    assert facts[0].text == ("DataLoader at train.py:42: sampler RandomSampler, which gives each of the 2 "
                             "ranks all of 960 samples")
    assert facts[1].text == "an epoch takes 30 batches on each rank; split by rank it takes 15"
    assert words.unsharded_fix(d, 10.0).expected == "run 10.0 s -> about 7.0 s (1.4x)"


def test_ranks_with_different_step_counts_are_uneven():
    ev = evidence(steps=60)
    ev.ranks = [RankEvidence(rank=0, file="r0", steps=50, mean_step_s=0.1, status="completed"),
                RankEvidence(rank=1, file="r1", steps=47, mean_step_s=0.1, status="completed")]
    d = decide_uneven(ev)
    assert d is not None and (d.fewest.rank, d.most.rank) == (1, 0)
    assert words.uneven_summary(d) == "the job's ranks take different numbers of steps: rank 1 47, rank 0 50"
    assert "drop_last=True" in words.uneven_fix().text
    ev.ranks[1].steps = 49  # one step apart: the last, partial batch
    assert decide_uneven(ev) is None
    ev.ranks[1].steps, ev.ranks[1].status = 30, "steps"  # stopped on purpose: not uneven
    assert decide_uneven(ev) is None


def test_a_single_ranks_report_says_it_is_one_and_where_the_job_is():
    ev = evidence(steps=40)
    ev.run.job = JobInfo(rank=1, world_size=2, job_id="812", folder="gpubottle-runs/train-812")
    notes = diagnose(ev).notes
    assert notes[0] == ("rank 1 of 2 of job 812: these findings are this rank's; `gpubottle report "
                        "gpubottle-runs/train-812` merges every rank's run directory into the job's report "
                        "once they have ended")


def _row(rank: int, node: str, wait: float, outside: float = 0.0) -> RankEvidence:
    return RankEvidence(rank=rank, file=f"r{rank}", steps=50, mean_step_s=0.1, node=node, input_share=wait,
                        busy_share=0.05, outside_cores=outside, status="completed")


def test_a_node_whose_every_rank_is_slow_sets_the_pace_with_its_load():
    from gpubottle.rules.ranks.decide import decide_straggler

    ev = evidence(steps=60)
    ev.ranks = [_row(0, "a", 0.05), _row(1, "a", 0.06), _row(2, "b", 0.8, 1.5), _row(3, "b", 0.7, 1.4)]
    d = decide_straggler(ev, [])
    assert d is not None and d.slow.rank == 2 and [r.rank for r in d.node_ranks] == [3]
    assert d.node_outside == 1.5
    assert words.straggler_summary(d).startswith("node b (rank 2, rank 3) sets the pace of the 4 ranks")
    facts = [f.text for f in words.straggler_facts(d)]
    assert "every rank on b (rank 2, rank 3) does more of its own work than any rank on the other nodes: " \
           "the node sets the pace" in facts
    assert any(t.startswith("other programs used 1.5 cores on b") for t in facts)
    assert words.straggler_fix(d).text.startswith("make node b faster first (other programs run there")
    # One slow rank on a node whose other rank keeps up: the rank, not the node.
    ev.ranks[3] = _row(3, "b", 0.05)
    d = decide_straggler(ev, [])
    assert d is not None and d.slow.rank == 2 and d.node_ranks == []
    assert words.straggler_summary(d).startswith("rank 2 sets the pace")
