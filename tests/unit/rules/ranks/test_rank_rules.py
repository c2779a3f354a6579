"""Multi-process jobs in-process: rank command lines, which children are ranks, who sets the pace,
the straggler's words, rank lines in 80 columns, and ranks stopping together."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gpubottle import vocabulary as v
from gpubottle.clock import StepClock
from gpubottle.evidence import Evidence, RankEvidence, RunInfo, StepEvidence
from gpubottle.launch.ranks import _target, is_new_rank
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper
from gpubottle.render.ranks import rank_line
from gpubottle.report import Finding, RankVerdict, Report
from gpubottle.rules.jobs import primary_reason
from gpubottle.rules.ranks import rank_straggler
from gpubottle.rules.ranks.decide import decide_straggler, pace_setter, shown_index


def test_the_rank_command_line_is_read_back_for_every_form():
    exe = "/usr/bin/python3"
    assert _target(["train.py", "--lr", "1"], [exe, "-u", "train.py", "--lr", "1"]) == (
        ["-u"], os.path.abspath("train.py"), None)
    assert _target(["-m", "a"], [exe, "-u", "-X", "dev", "-m", "pkg.train", "a"]) == (
        ["-u", "-X", "dev"], None, "pkg.train")
    assert _target(["-m", "a"], [exe, "-mpkg.train", "a"]) == ([], None, "pkg.train")
    with pytest.raises(ValueError):
        _target(["-c", "x"], [exe, "-c", "pass", "x"])


def test_only_a_launchers_children_with_rank_variables_it_did_not_pass_down_are_ranks():
    plan = {"launcher": 10, "inherited": {"RANK": None, "LOCAL_RANK": None, "TORCHELASTIC_RUN_ID": None}}
    assert is_new_rank(plan, {"RANK": "1", "LOCAL_RANK": "1"}, 10)  # torchrun's worker
    assert not is_new_rank(plan, {"RANK": "1"}, 11)  # a grandchild: a rank's own subprocess
    assert not is_new_rank(plan, {}, 10)
    # The script is itself rank 3 of a Slurm job: what it starts inherits RANK=3 and is no rank...
    slurm = {"launcher": 10, "inherited": {"RANK": "3", "LOCAL_RANK": "0", "TORCHELASTIC_RUN_ID": None}}
    assert not is_new_rank(slurm, {"RANK": "3", "LOCAL_RANK": "0"}, 10)
    # ...but torchrun run from it starts ranks (its run id, its own RANK values).
    assert is_new_rank(slurm, {"RANK": "3", "LOCAL_RANK": "0", "TORCHELASTIC_RUN_ID": "x"}, 10)


def _row(rank: int, wait: float, busy: float, step: float = 0.03, **kw: Any) -> RankEvidence:
    return RankEvidence(rank=rank, file=f"events-rank{rank}.jsonl", steps=50, mean_step_s=step,
                        input_share=wait, busy_share=busy, **kw)


def test_the_rank_with_its_own_work_filling_the_step_sets_the_pace():
    # In step with each other: same step time; rank 2 computes all of it, the others wait.
    rows = [_row(0, 0.02, 0.30), _row(1, 0.01, 0.32), _row(2, 0.01, 0.95), _row(3, 0.02, 0.31)]
    slow, lost, how = pace_setter(rows) or (None, 0.0, "")
    assert slow is rows[2] and how == "work" and lost == pytest.approx(0.63, abs=0.01)
    # GPU ranks: communication kernels are where the others wait.
    gpu = [_row(0, 0.0, 0.9, communication_share=0.05), _row(1, 0.0, 0.9, communication_share=0.5)]
    assert (pace_setter(gpu) or (None,))[0] is gpu[0]
    # Alike: nobody sets the pace; not in step: the slowest step does.
    assert pace_setter([_row(0, 0.5, 0.4), _row(1, 0.45, 0.42)]) is None
    assert pace_setter([_row(0, 0.91, 0.06), _row(1, 0.68, 0.06)]) is None  # starving alike
    alike = [_row(0, 0.87, 0.04), _row(1, 0.24, 0.06)]
    both = [RankVerdict(0, None, v.DATA_STARVED), RankVerdict(1, None, v.DATA_STARVED)]
    assert pace_setter(alike, both) is None  # one loader a hair slower: the other's buffer fills
    # (a rank without a diagnosis says nothing against it)
    assert (pace_setter(alike, both[:1]) or (None,))[0] is alike[0]
    apart = [_row(0, 0.1, 0.9, step=0.02), _row(1, 0.1, 0.9, step=0.03)]
    assert pace_setter(apart) == (apart[1], pytest.approx(1 / 3), "step")


def test_the_job_shows_the_rank_that_failed_first_unless_it_has_no_verdict():
    """Rank 1 raised at step 45; beside the suite's runs its steps once said nothing (inconclusive,
    no finding) and the job's verdict was inconclusive with rank 0 data-starved beside it."""
    rows = [_row(0, 0.9, 0.05), _row(1, 0.2, 0.05)]
    rows[1].exception, rows[1].exit_code, rows[1].ended_at = "ValueError: bad batch", 1, 5.0
    told = [RankVerdict(0, None, v.DATA_STARVED), RankVerdict(1, None, v.DATA_STARVED)]
    assert shown_index(rows, told) == 1  # its exception, its verdict
    untold = [RankVerdict(0, None, v.DATA_STARVED), RankVerdict(1, None, v.INCONCLUSIVE)]
    assert shown_index(rows, untold) == 0  # the failure stays in the notes
    none = [RankVerdict(0, None, v.INCONCLUSIVE), RankVerdict(1, None, v.INCONCLUSIVE)]
    assert shown_index(rows, none) == 1


def test_the_straggler_finding_says_why_in_its_own_terms():
    rows = [_row(0, 0.01, 0.2), _row(1, 0.62, 0.3, workers=2, workers_cores=1.8,
                                     worker_run_queue=0.4)]
    ev = Evidence(run=RunInfo(kind="run"), steps=StepEvidence(source="optimizer"), ranks=rows)
    verdicts = [RankVerdict(1, None, v.DATA_STARVED, "the loop waits for data 62%")]
    d = decide_straggler(ev, verdicts)
    assert d is not None and d.slow.rank == 1 and d.how == "work" and d.ranks == 2
    assert d.why == "the loop waits for data 62%" and [r.rank for r in d.others] == [0]
    (f,) = rank_straggler(ev, verdicts)
    assert f.category == v.STRAGGLER and ("straggler_lost", round(d.lost, 4)) in [
        (x.name, x.value) for x in f.evidence]
    gpu = [_row(0, 0.0, 0.9, communication_share=0.1, communication_overlap=0.5),
           _row(1, 0.0, 0.9, communication_share=0.6, communication_overlap=0.2)]
    ev.ranks = gpu
    d = decide_straggler(ev)
    assert d is not None and d.slow.rank == 0 and d.why is None  # its own work: 90% against 40%


def test_rank_lines_fit_80_columns():
    r = _row(123, 0.5, 0.5, pid=4_194_304, workers=16, workers_cores=15.9, memory_bytes=1 << 40,
             exception="ValueError: " + "x" * 200, exit_code=1)
    assert len(rank_line(r, True, RankVerdict(123, None, v.PREPROCESSING_BOUND))) <= 80


def test_ranks_stop_together_for_duration(tmp_path: Path):
    """The first rank past its deadline names a step a few ahead; every rank stops at it."""
    now = [0.0]
    agreed = str(tmp_path / "stop-at")
    stoppers = []
    for r in range(2):
        now[0] = 0.6 * r  # rank 1 started a little later: its deadline is later
        rec = Recorder(str(tmp_path / f"e{r}.jsonl"), start_thread=False)
        clock = StepClock()
        clock.optimizer_created()
        stoppers.append(Stopper(rec, clock, None, 10.0, now=lambda: now[0], agreed=agreed))
    stopped_at: dict[int, int] = {}
    for step in range(1, 40):
        now[0] = 0.5 * step
        for r, s in enumerate(stoppers):
            if r in stopped_at:
                continue
            s.clock.optimizer_step(1, now[0])
            try:
                s.check(True)
            except EarlyStop:
                stopped_at[r] = s.clock.steps
    assert stopped_at == {0: 23, 1: 23}  # deadline at step 20, three steps' margin
    assert Path(agreed).read_text() == "23"



def test_a_ranks_reason_is_its_verdicts_finding_even_when_another_leads():
    """A rank of a cold fresh clone's srun-style job: start-up took 77% of its short run and led,
    its verdict data-starved; its reason was dropped because the lead was not the verdict, and the
    job's straggler finding lost "waits for data"."""
    findings = [Finding(v.STARTUP_BOUND, "warning", None, "start-up takes 77% of the run"),
                Finding(v.DATA_STARVED, "critical", 0.92, "the training loop waits for data 92%")]
    ev = Evidence(run=RunInfo(kind="run"), steps=StepEvidence(source="optimizer"))
    assert primary_reason(Report(v.DATA_STARVED, findings, ev)) == "the training loop waits for data 92%"
    assert primary_reason(Report(v.INCONCLUSIVE, findings, ev)) is None
