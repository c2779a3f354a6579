"""Multi-process jobs: torchrun and mp.spawn ranks, each profiled, one job report (gloo on CPU)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import SCRIPTS, gpubottle, load_report, machine_loaded

from gpubottle import vocabulary as v
from gpubottle.clock import StepClock
from gpubottle.collect.system import core_budget
from gpubottle.evidence import Evidence, RankEvidence, RunInfo, StepEvidence
from gpubottle.launch.ranks import SITE_DIR, _target, is_new_rank
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper
from gpubottle.render.ranks import rank_line
from gpubottle.report import RankVerdict
from gpubottle.rules.ranks import pace_setter, rank_straggler

DDP = SCRIPTS / "ranks" / "ddp_train.py"
# Every e2e job: 30 steps, --standalone (a free port: tests run side by side), bounded.
JOB = ("--no-status", "--steps", "30")
TIMEOUT = 150


def _job(tmp: Path, *opts: str, args: tuple[str, ...] = (), torchrun: bool = True
         ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]:
    out = tmp / "run"
    # The spelling torch documents: the module, then torchrun's own options (gpubottle has a
    # --nproc-per-node of its own too: after -m, python's rule holds and they are torchrun's).
    launch = ("-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone") if torchrun else ()
    proc = gpubottle("run", "--out", str(out), "--json", str(tmp / "r.json"), *JOB, *opts, *launch,
                     str(DDP), *args, timeout=TIMEOUT, env={"OMP_WAIT_POLICY": "PASSIVE"})
    assert (tmp / "r.json").exists(), proc.stderr[-3000:]
    return proc, load_report(tmp / "r.json"), out


def _ranks(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's top-level rows: each rank's numbers and its own verdict."""
    ranks: list[dict[str, Any]] = report["ranks"]
    assert [r["rank"] for r in ranks] == [r["rank"] for r in report["evidence"]["ranks"]]
    return ranks


# --- end to end ------------------------------------------------------------------------------


@pytest.mark.exclusive
def test_data_starved_job_under_nproc_per_node_where_a_rank_raises(tmp_path: Path):
    """Both ranks starve (one slow DataLoader worker each); rank 1 raises at step 45."""
    proc, report, out = _job(tmp_path, "--no-stacks", "--steps", "60", "--profile-window", "on",
                             "--window-start", "8", "--window-steps", "3", args=(
        "--sleep-ms", "3", "--workers", "1", "--fail-rank", "1", "--fail-step", "45"))
    assert proc.returncode == 1, proc.stderr[-3000:]  # torchrun's status comes through
    assert report["primary"] == v.DATA_STARVED, (report["notes"], report["steps"])
    ranks = _ranks(report)
    assert [r["rank"] for r in ranks] == [0, 1]
    # Each rank waits for its batches (on a machine loaded by other tests, a rank's one worker can
    # wait for a core instead: preprocessing-bound; the shown rank's verdict is the job's).
    assert all(r["launcher"] == "torchrun" for r in ranks)
    # Beside the suite's other runs, rank 0 (killed by torchrun after rank 1 raised) has once come
    # out inconclusive with no finding (not understood yet; see the issue 21 note).
    allowed = (v.DATA_STARVED, v.PREPROCESSING_BOUND) + ((v.INCONCLUSIVE,) if machine_loaded(report) else ())
    assert ranks[1]["verdict"] in (v.DATA_STARVED, v.PREPROCESSING_BOUND), ranks[1]
    assert all(r["verdict"] in allowed for r in ranks), [
        (r["verdict"], r.get("why"), r.get("steps"), r.get("status"), r.get("mean_step_s")) for r in ranks]
    # Each rank's one DataLoader worker is its own, not the other rank's nor the launcher's.
    assert [r["workers"] for r in ranks] == [1, 1]
    launcher = json.loads((out / "meta.json").read_text())["child_pid"]
    assert len({r["pid"] for r in ranks} | {launcher}) == 3
    # The ranks share the machine's cores: each rank's fix counts on its part of them.
    assert report["evidence"]["cpu"]["cores_available"] == pytest.approx(
        (core_budget().available or 0) / 2)
    # The rank that raised is named first, with its exit status; rank 0's error follows from it.
    assert report["evidence"]["shown_rank"] == 1
    assert report["source"]["exception"].startswith("rank 1: ValueError: bad batch on rank 1")
    assert ranks[1]["exit_code"] == 1 and ranks[1]["steps"] == 45
    assert "rank 1: ValueError" in proc.stderr and "(exit status 1)" in proc.stderr
    assert "Ranks (2;" in proc.stderr
    # Each rank records its own profiler window (on GPU machines: its communication kernels).
    assert all((out / f"profiler-window-rank{r}.pt.trace.json").stat().st_size > 0 for r in (0, 1))
    assert report["evidence"]["gpu"]["source"] == "profiler-window"


@pytest.mark.exclusive
def test_under_mp_spawn_the_slow_rank_is_named_with_its_cause_and_node_directories_merge(
        tmp_path: Path):
    """A data-starved job under mp.spawn, where only rank 1's samples are slow to read: rank 0
    waits for it at every all-reduce."""
    proc, report, out = _job(tmp_path, args=("--spawn", "2", "--slow-rank", "1", "--sleep-ms", "6"),
                             torchrun=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [(r["rank"], r["launcher"], r["steps"]) for r in _ranks(report)] == [
        (0, "mp.spawn", 30), (1, "mp.spawn", 30)]
    ranks = {r["rank"]: r for r in _ranks(report)}
    assert report["evidence"]["shown_rank"] == 1
    assert report["primary"] == v.DATA_STARVED  # rank 1's own verdict sets the job's
    assert ranks[1]["verdict"] == v.DATA_STARVED and ranks[0]["verdict"] != v.DATA_STARVED
    assert ranks[1]["input_share"] > 0.5 > ranks[0]["input_share"]
    found = [f for f in report["findings"] if f["category"] == v.STRAGGLER]
    assert found and found[0]["summary"].startswith("rank 1 sets the pace")
    assert "waits for data" in found[0]["summary"]
    # Its stacks are its own: rank 1's hot function is the slow read.
    hot = report["evidence"]["stacks"]
    assert hot is not None and any("__getitem__" in h["function"] for h in hot["main_hot"][:3])
    # The run directories of two nodes (here: one rank each) merge into the same job.
    nodes = []
    for rank in (0, 1):  # one directory per rank, as two nodes' runs would be
        d = tmp_path / f"node{rank}"
        d.mkdir()
        for name in ("meta.json", "samples.jsonl", f"events-rank{rank}.jsonl",
                     f"evidence-rank{rank}.json"):
            shutil.copy(out / name, d / name)
        nodes.append(str(d))
    proc = gpubottle("report", *nodes, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    assert [r["rank"] for r in _ranks(merged)] == [0, 1]
    assert merged["evidence"]["shown_rank"] == 1 and merged["primary"] == report["primary"]
    assert any(f["category"] == v.STRAGGLER for f in merged["findings"])
    text = gpubottle("report", *nodes)
    assert "Ranks (2;" in text.stdout and all(len(line) <= 80 for line in text.stdout.splitlines())
    # The same rank twice is not one job; a single-process run has no ranks to merge.
    same = gpubottle("report", nodes[0], nodes[0])
    assert same.returncode == 3 and "same job" in same.stderr


# --- pieces ------------------------------------------------------------------------------------


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


def test_our_sitecustomize_runs_the_one_it_shadows(tmp_path: Path):
    (tmp_path / "sitecustomize.py").write_text("print('theirs ran')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SITE_DIR, str(tmp_path)]),
           "GPUBOTTLE_RANKS": json.dumps({"launcher": -1}), "RANK": "0"}
    out = subprocess.run([sys.executable, "-c", "print('script ran')"], env=env, text=True,
                         capture_output=True, timeout=60)
    assert out.stdout.split() == ["theirs", "ran", "script", "ran"], out.stderr


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


def test_the_straggler_finding_says_why_in_its_own_terms():
    rows = [_row(0, 0.01, 0.2), _row(1, 0.62, 0.3, workers=2, workers_cores=1.8,
                                     worker_run_queue=0.4)]
    ev = Evidence(run=RunInfo(kind="run"), steps=StepEvidence(source="optimizer"), ranks=rows)
    (f,) = rank_straggler(ev, [RankVerdict(1, None, v.DATA_STARVED, "the loop waits for data 62%")])
    assert f.summary.startswith("rank 1 sets the pace of the 2 ranks")
    assert "the loop waits for data 62%" in f.summary
    assert any("2 DataLoader worker(s)" in x.text and "40%" in x.text for x in f.evidence)
    gpu = [_row(0, 0.0, 0.9, communication_share=0.1, communication_overlap=0.5),
           _row(1, 0.0, 0.9, communication_share=0.6, communication_overlap=0.2)]
    ev.ranks = gpu
    (f,) = rank_straggler(ev)
    assert f.summary.startswith("rank 0 sets the pace")
    assert "rank 1 communication 60% (20% of it under compute)" in f.evidence[-1].text


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


def test_bad_job_options_are_usage_errors_before_anything_runs(tmp_path: Path):
    for opts in (("--nproc-per-node", "0"), ("--torchrun-args", "--standalone"),
                 ("--nproc-per-node", "2", "--try-fixes"),
                 ("--nproc-per-node", "2", "--torchrun-args", "'unbalanced")):
        proc = gpubottle("run", "--out", str(tmp_path / "run"), *opts, str(DDP))
        assert proc.returncode == 2 and proc.stderr.startswith("gpubottle: error:"), (opts, proc.stderr)
        assert not (tmp_path / "run").exists()
