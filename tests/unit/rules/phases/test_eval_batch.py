"""An evaluation DataLoader of batch_size=1, from made-up evidence shaped like a measured run: an
MLP trained in batches of 128 and evaluated on 2,048 samples every 64 steps, 4 passes of 0.1-ms
batches, 0.84 s of a 4.4-s run (training 0.31 s). It read compute-bound and nothing about the
evaluation; at batch_size=128 the passes took 0.03 s."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import AccountEntry, Evidence, LoaderInfo, PhaseEvidence, StepEvidence
from gpubottle.rules import diagnose


def _ev(batch_size: int = 1, batch_s: float = 0.0001, wait_s: float = 0.00005,
        wait_cpu_s: float | None = 0.00005, workers: int = 0, same_loader: bool = False) -> Evidence:
    ev = evidence(steps=250, step_s=0.0013, main=1.0, cores=2.0)
    ev.loaders[0].batch_size = 128
    lo = ev.loaders[0] if same_loader else LoaderInfo(id=2, site="train.py:9", batch_size=batch_size,
                                                      num_workers=workers, eval_passes=4)
    n = 4 * 2048 // batch_size
    ph = PhaseEvidence(phase="eval", loader=lo, seconds=round(n * batch_s, 4), passes=4, every_steps=64,
                       steps=StepEvidence(source="dataloader", durations_s=[batch_s] * n,
                                          input_wait_s=[wait_s] * n, input_wait_cpu_s=[wait_cpu_s] * n))
    ev.phases = [ph]
    ev.account = [AccountEntry("startup", 2.2, 0.5), AccountEntry("train", 0.31, 0.07),
                  AccountEntry("eval", ph.seconds, 0.19), AccountEntry("teardown", 0.73, 0.17)]
    return ev


def _batch_findings(ev: Evidence) -> list:
    return [f for f in diagnose(ev).findings if f.category == v.EVAL_BOUND and "in batches of" in f.summary]


def test_an_evaluation_in_batches_of_one_is_said_with_the_training_batch_size_as_the_fix() -> None:
    [f] = _batch_findings(_ev())
    assert f.summary.startswith("evaluation takes 20% of the run (4 passes of the DataLoader at "
                                "train.py:9) in batches of 1: 2,048 model calls a pass of 0.1 ms "
                                "each"), f.summary
    [fix] = f.fixes
    assert fix.change == {"batch_size": [1, 128]} and fix.where == "train.py:9"
    assert fix.text.startswith("evaluate in larger batches: batch_size=1 -> 128 on the evaluation's "
                               "DataLoader (the training's batch size;"), fix.text
    assert "try it and time it" in fix.text and fix.expected is None and f.phase == "eval"


def test_not_said_for_long_batches_reads_the_training_loader_or_a_small_share() -> None:
    assert not _batch_findings(_ev(batch_s=0.02))  # each batch's own work sets the pace
    assert not _batch_findings(_ev(batch_s=0.002, wait_s=0.0018, wait_cpu_s=0.0001))  # a read a sample
    assert _batch_findings(_ev(batch_s=0.002, wait_s=0.0018, wait_cpu_s=0.0001, workers=2))
    assert not _batch_findings(_ev(same_loader=True))  # the training's own loader: its size is the training's
    assert not _batch_findings(_ev(batch_size=32))
    ev = _ev(batch_s=0.000005)  # 0.04 s of passes in a 3.3-s run
    assert not _batch_findings(ev)
