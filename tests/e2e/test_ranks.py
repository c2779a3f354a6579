"""Multi-process jobs: torchrun and mp.spawn ranks, each profiled, one job report (gloo on CPU); the
rank rules in-process: tests/unit/rules/ranks/test_rank_rules.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import SCRIPTS, gpubottle, gpubottle_here, load_report, machine_loaded
from script_lines import line_of

from gpubottle import vocabulary as v
from gpubottle.collect.system import core_budget
from gpubottle.launch.ranks import SITE_DIR

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


def _why(report: dict[str, Any]) -> str:
    """What a job's verdict rested on, in full (an inconclusive job without a finding has been seen
    beside the suite's runs and not reproduced alone: its next occurrence must say why)."""
    ev = report["evidence"]
    cpu = ev.get("cpu") or {}
    steps = {k: report["steps"].get(k) for k in ("count", "measured", "warmup", "input_wait_share")}
    keys = ("rank", "verdict", "why", "steps", "status", "input_share", "busy_share", "workers_cores",
            "worker_run_queue")
    return json.dumps({
        "notes": report["notes"], "steps": steps, "loaders": len(ev.get("loaders") or []),
        "findings": [(f["category"], f["severity"], f["summary"]) for f in report["findings"]],
        "cpu": {k: cpu.get(k) for k in ("per_worker_cores", "per_worker_run_queue", "main_run_queue",
                                        "outside_cores", "tree_cores")},
        "ranks": [{k: r.get(k) for k in keys} for r in report["ranks"]]}, indent=1)


# --- end to end ------------------------------------------------------------------------------


@pytest.mark.two_slots
def test_data_starved_job_under_nproc_per_node_where_a_rank_raises(tmp_path: Path):
    """Both ranks starve (one slow DataLoader worker each); rank 1 raises at step 45."""
    # (reads of 6 ms: at 3, rank 1 read compute-bound, input 13% of its steps, in a fresh-check
    # suite; not reproduced beside two busy loops)
    proc, report, out = _job(tmp_path, "--no-stacks", "--steps", "60", "--profile-window", "on",
                             "--window-start", "8", "--window-steps", "3", args=(
        "--sleep-ms", "6", "--workers", "1", "--fail-rank", "1", "--fail-step", "45"))
    assert proc.returncode == 1, proc.stderr[-3000:]  # torchrun's status comes through
    assert report["primary"] == v.DATA_STARVED, _why(report)
    ranks = _ranks(report)
    assert [r["rank"] for r in ranks] == [0, 1]
    # Each rank waits for its batches (on a machine loaded by other tests, a rank's one worker can
    # wait for a core instead: preprocessing-bound; the shown rank's verdict is the job's).
    assert all(r["launcher"] == "torchrun" for r in ranks)
    # The two loaders are alike, yet one a hair slower sets the pace: the other rank's worker fills
    # its buffer and that rank waits at the all-reduce, with no verdict of its own (seen beside the
    # suite's runs: rank 0 9% input, 4% busy, rank 1 93% input; the job data-starved with "rank 1
    # sets the pace"). A failed rank with no verdict of its own gives way to one that has a
    # verdict, and its failure stays in the notes.
    pace = next((f["summary"] for f in report["findings"] if f["category"] == v.STRAGGLER), "")

    def told(r: dict[str, Any]) -> bool:
        waits = bool(pace) and not pace.startswith(f"rank {r['rank']} sets the pace")
        return r["verdict"] in (v.DATA_STARVED, v.PREPROCESSING_BOUND) or (
            r["verdict"] == v.INCONCLUSIVE and (waits or machine_loaded(report)))

    shown = 0 if ranks[1]["verdict"] == v.INCONCLUSIVE else 1
    if shown == 0:
        assert "rank 1, which failed first, has no verdict of its own" in report["notes"][0], _why(report)
    assert all(told(r) for r in ranks), _why(report)
    # Each rank's one DataLoader worker is its own, not the other rank's nor the launcher's.
    assert [r["workers"] for r in ranks] == [1, 1]
    launcher = json.loads((out / "meta.json").read_text())["child_pid"]
    assert len({r["pid"] for r in ranks} | {launcher}) == 3
    # The ranks share the machine's cores: each rank's fix counts on its part of them.
    assert report["evidence"]["cpu"]["cores_available"] == pytest.approx(
        (core_budget().available or 0) / 2)
    # The rank that raised is named first, with its exit status; rank 0's error follows from it.
    assert report["evidence"]["shown_rank"] == shown
    assert report["source"]["exception"].startswith("rank 1: ValueError: bad batch on rank 1")
    assert ranks[1]["exit_code"] == 1 and ranks[1]["steps"] == 45
    assert "rank 1: ValueError" in proc.stderr and "(exit status 1)" in proc.stderr
    assert "Ranks (2;" in proc.stderr
    # Each rank records its own profiler window (on GPU machines: its communication kernels).
    assert all((out / f"profiler-window-rank{r}.pt.trace.json").stat().st_size > 0 for r in (0, 1))
    assert report["evidence"]["gpu"]["source"] == "profiler-window"


@pytest.mark.two_slots
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
    # Its stacks are its own: rank 1's hot function is the slow read. (Beside busy programs a
    # niced py-spy can get no sample of a 30-step rank: seen once in a suite beside two.)
    hot = report["evidence"]["stacks"]
    if not machine_loaded(report):
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
    proc = gpubottle_here("report", *nodes, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    assert [r["rank"] for r in _ranks(merged)] == [0, 1]
    assert merged["evidence"]["shown_rank"] == 1 and merged["primary"] == report["primary"]
    assert any(f["category"] == v.STRAGGLER for f in merged["findings"])
    text = gpubottle_here("report", *nodes)
    assert "Ranks (2;" in text.stdout and all(len(line) <= 80 for line in text.stdout.splitlines())
    # The same rank twice is not one job; a single-process run has no ranks to merge.
    same = gpubottle_here("report", nodes[0], nodes[0])
    assert same.returncode == 3 and "same job" in same.stderr


# --- pieces ------------------------------------------------------------------------------------


def test_our_sitecustomize_runs_the_one_it_shadows(tmp_path: Path):
    (tmp_path / "sitecustomize.py").write_text("print('theirs ran')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SITE_DIR, str(tmp_path)]),
           "GPUBOTTLE_RANKS": json.dumps({"launcher": -1}), "RANK": "0"}
    out = subprocess.run([sys.executable, "-c", "print('script ran')"], env=env, text=True,
                         capture_output=True, timeout=60)
    assert out.stdout.split() == ["theirs", "ran", "script", "ran"], out.stderr


def test_bad_job_options_are_usage_errors_before_anything_runs(tmp_path: Path):
    for opts in (("--nproc-per-node", "0"), ("--torchrun-args", "--standalone"),
                 ("--nproc-per-node", "2", "--try-fixes"),
                 ("--nproc-per-node", "2", "--torchrun-args", "'unbalanced")):
        proc = gpubottle("run", "--out", str(tmp_path / "run"), *opts, str(DDP))
        assert proc.returncode == 2 and proc.stderr.startswith("gpubottle: error:"), (opts, proc.stderr)
        assert not (tmp_path / "run").exists()


# --- ranks a cluster's launcher starts: one `gpubottle run` per rank (srun) ------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.two_slots
def test_srun_style_ranks_land_in_one_job_folder_that_merges(tmp_path: Path):
    """Two `gpubottle run`s started together, each with the environment srun gives its task, in the
    same folder, default --out: two rank directories under one job folder, the last rank to finish
    prints the job's report, and `gpubottle report` on the folder names the slow rank with its cause
    (rank 1's samples are slow to read), as --nproc-per-node does for the same script."""
    from conftest import ROOT, with_harness

    job = f"t{os.getpid()}"
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": with_harness(str(ROOT)),
               "SLURM_JOB_ID": job, "SLURM_PROCID": str(rank), "SLURM_NTASKS": "2",
               "SLURM_LOCALID": str(rank),
               "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "gpubottle", "run", *JOB, str(DDP), "--slow-rank", "1", "--sleep-ms", "6"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    folder = tmp_path / "gpubottle-runs" / f"ddp_train-{job}"
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["rank0", "rank1"]
    # Each rank's own report says what it is; the last to finish printed the job's.
    assert any("rank 0 of 2 of job" in o[1] for o in outs) and any("rank 1 of 2 of job" in o[1] for o in outs)
    assert sum("every rank of the job has finished" in o[1] for o in outs) == 1, [o[1][-1500:] for o in outs]
    assert (folder / "report.json").exists()
    proc = gpubottle_here("report", str(folder), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    ranks = {r["rank"]: r for r in _ranks(report)}
    assert sorted(ranks) == [0, 1]
    assert {r["launcher"] for r in report["evidence"]["ranks"]} == {"srun"}
    assert {r["job"] for r in report["evidence"]["ranks"]} == {job}
    assert all(r["node"] for r in report["evidence"]["ranks"])
    assert report["job"]["id"] == job and report["job"]["world_size"] == 2
    assert report["job"]["missing_ranks"] == []
    assert report["evidence"]["shown_rank"] == 1, _why(report)
    found = [f for f in report["findings"] if f["category"] == v.STRAGGLER]
    assert found and found[0]["summary"].startswith("rank 1 sets the pace"), _why(report)
    assert "waits for data" in found[0]["summary"]
    # No DistributedSampler: both ranks iterate the same batches.
    unsharded = [f for f in report["findings"] if f["category"] == v.UNSHARDED_DATA]
    assert unsharded and "DistributedSampler" in unsharded[0]["fixes"][0]["text"], _why(report)
    text = gpubottle_here("report", str(folder))
    assert "Ranks (2;" in text.stdout and all(len(line) <= 80 for line in text.stdout.splitlines())
    # Ranks of two different jobs are refused, losing nothing; so is the same rank twice.
    other = tmp_path / "other"
    shutil.copytree(folder / "rank1", other / "rank1")
    events = other / "rank1" / "events.jsonl"
    events.write_text(events.read_text().replace(f'"{job}"', '"another"'))
    mixed = gpubottle_here("report", str(folder / "rank0"), str(other / "rank1"))
    assert mixed.returncode == 3 and "2 different jobs" in mixed.stderr, mixed.stderr
    both = tmp_path / "both"  # one folder holding ranks of two jobs
    shutil.copytree(folder / "rank0", both / "rank0")
    shutil.copytree(other / "rank1", both / "rank1")
    mixed = gpubottle_here("report", str(both))
    assert mixed.returncode == 3 and "2 different jobs" in mixed.stderr, mixed.stderr
    twice = gpubottle_here("report", str(folder / "rank1"), str(folder / "rank1"))
    assert twice.returncode == 3 and "same job" in twice.stderr, twice.stderr
    assert (folder / "rank0" / "report.json").exists() and (folder / "rank1" / "report.json").exists()
    # A rank missing (a node that died): the others are reported, the missing one named.
    shutil.rmtree(folder / "rank0")
    lone = gpubottle_here("report", str(folder), "--format", "json")
    assert lone.returncode == 0, lone.stderr
    alone = json.loads(lone.stdout)
    assert any("rank 0 of 2: no run directory here" in n for n in alone["notes"])
    assert alone["job"]["missing_ranks"] == [0]


@pytest.mark.two_slots
def test_two_torchrun_nodes_merge_into_one_job(tmp_path: Path):
    """A two-node torchrun job, each node's launcher under its own `gpubottle run` (one rank a node,
    both nodes on this machine), merged by `gpubottle report NODE0 NODE1` into one job with the slow
    node's rank as the pace-setter."""
    from conftest import ROOT, with_harness

    port = str(_free_port())
    procs = []
    for node in (0, 1):
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": with_harness(str(ROOT))}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "gpubottle", "run", *JOB, "--out", str(tmp_path / f"node{node}"),
             "--nproc-per-node", "1", "--torchrun-args",
             f"--nnodes 2 --node-rank {node} --master-addr 127.0.0.1 --master-port {port}",
             str(DDP), "--slow-rank", "1", "--sleep-ms", "6"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    proc = gpubottle_here("report", str(tmp_path / "node0"), str(tmp_path / "node1"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    rows = report["evidence"]["ranks"]
    assert sorted(r["rank"] for r in rows) == [0, 1] and len({r["node"] for r in rows}) == 2
    assert {r["launcher"] for r in rows} == {"torchrun"}
    assert len({r["job"] for r in rows}) == 1  # torchrun's run id, the same on both nodes (or none)
    assert report["evidence"]["shown_rank"] == 1, _why(report)
    found = [f for f in report["findings"] if f["category"] == v.STRAGGLER]
    assert found and found[0]["summary"].startswith("rank 1 sets the pace"), _why(report)


@pytest.mark.two_slots
def test_ranks_known_only_from_init_process_group_merge(tmp_path: Path):
    """Two ranks whose rank and world size come from the script's own arguments (the environment has
    only MASTER_ADDR/PORT): each run says it is one rank of the job once its process group is up,
    and their directories merge into the job."""
    from conftest import ROOT, with_harness

    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        env.update({"OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": with_harness(str(ROOT)),
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "gpubottle", "run", *JOB, "--out", str(tmp_path / f"r{rank}"),
             "--json", str(tmp_path / f"r{rank}.json"), str(DDP), "--rank", str(rank), "--world", "2",
             "--slow-rank", "1", "--sleep-ms", "6"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    own = load_report(tmp_path / "r1.json")
    assert own["job"]["rank"] == 1 and own["job"]["world_size"] == 2
    assert any(n.startswith("rank 1 of 2 of job 127.0.0.1-") for n in own["notes"]), own["notes"]
    proc = gpubottle_here("report", str(tmp_path / "r0"), str(tmp_path / "r1"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(r["rank"] for r in report["evidence"]["ranks"]) == [0, 1]
    assert {r["launcher"] for r in report["evidence"]["ranks"]} == {"init_process_group"}
    assert report["evidence"]["shown_rank"] == 1, _why(report)


@pytest.mark.two_slots
def test_an_accelerate_script_under_torchrun_is_one_job(tmp_path: Path):
    """`accelerate launch --multi_gpu` is torchrun underneath (its own launcher needs MPI on CPU):
    the same Accelerate script under torchrun, 2 ranks on gloo. The loader accelerator.prepare()
    rebuilt splits by rank, so no unsharded-data; rank 1's slow reads set the pace."""
    pytest.importorskip("accelerate")
    script = SCRIPTS / "ranks" / "accelerate_train.py"
    proc = gpubottle("run", "--out", str(tmp_path / "run"), "--json", str(tmp_path / "r.json"), *JOB,
                     "--nproc-per-node", "2", "--torchrun-args", "--standalone", str(script),
                     "--slow-rank", "1", "--sleep-ms", "6", timeout=TIMEOUT,
                     env={"OMP_WAIT_POLICY": "PASSIVE"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = load_report(tmp_path / "r.json")
    assert [(r["rank"], r["steps"]) for r in _ranks(report)] == [(0, 30), (1, 30)]
    assert report["evidence"]["shown_rank"] == 1, _why(report)
    found = [f for f in report["findings"] if f["category"] == v.STRAGGLER]
    assert found and found[0]["summary"].startswith("rank 1 sets the pace"), _why(report)
    # accelerate's prepare() rebuilt the script's DataLoader: the rebuilt one is the user's, at the
    # user's DataLoader(...) line (issue 31.1), with the rank split prepare() gave it.
    prepared = [lo for lo in report["evidence"]["loaders"] if lo["rebuilt_by"]]
    assert prepared and prepared[0]["rank_split"] is True and prepared[0]["world"] == 2
    assert prepared[0]["rebuilt_by"] == "accelerate.accelerator.Accelerator.prepare"
    assert prepared[0]["site"].endswith("accelerate_train.py:" + str(line_of(script, "loader = DataLoader(")))
    assert not any(f["category"] == v.UNSHARDED_DATA for f in report["findings"]), _why(report)
