"""A rank a cluster's launcher started, known from its environment (launch/job.py): which spelling,
the job's id, and the run directory each rank (or each node's launcher) writes."""

from __future__ import annotations

import os

from gpubottle.launch.job import default_out, forget_earlier_job, job_id, job_rank, launches_ranks


def test_each_launchers_spelling_is_a_rank():
    srun = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_JOB_ID": "812",
            "SLURM_STEP_ID": "0"}
    r = job_rank(srun)
    assert r is not None
    assert (r.rank, r.world_size, r.local_rank, r.job_id, r.launcher) == (3, 4, 1, "812.0", "srun")
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.5",
           "MASTER_PORT": "29500"}
    r = job_rank(env)
    assert r is not None and (r.rank, r.job_id, r.launcher) == (1, "10.0.0.5-29500", "env")
    # The script's own spelling inside a Slurm job: the job is Slurm's.
    r = job_rank({**env, "SLURM_JOB_ID": "99"})
    assert r is not None and (r.job_id, r.launcher) == ("99", "srun")
    mpi = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
           "OMPI_MCA_ess_base_jobid": "4711"}
    r = job_rank(mpi)
    assert r is not None and (r.rank, r.job_id, r.launcher) == (0, "4711", "mpirun")
    pmi = {"PMI_RANK": "1", "PMI_SIZE": "2"}
    r = job_rank(pmi)
    assert r is not None and (r.rank, r.job_id) == (1, "job")


def test_a_single_process_or_nonsense_is_no_rank():
    assert job_rank({}) is None
    assert job_rank({"RANK": "0", "WORLD_SIZE": "1"}) is None  # a job of one is a run of its own
    assert job_rank({"RANK": "2", "WORLD_SIZE": "2"}) is None  # out of range
    assert job_rank({"RANK": "x", "WORLD_SIZE": "2"}) is None
    assert job_id({"TORCHELASTIC_RUN_ID": "abc"}) == "abc"


def test_launchers_are_not_ranks_and_every_rank_writes_its_own_directory():
    assert launches_ranks(None, "torch.distributed.run", None)
    assert launches_ranks("/usr/bin/torchrun", None, None)
    assert launches_ranks("train.py", None, 2)
    assert not launches_ranks("train.py", None, None)
    r = job_rank({"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "812"})
    assert default_out("scripts/train.py", r, False) == os.path.join("gpubottle-runs", "train-812", "rank1")
    # A node's launcher in a multi-node Slurm job: one directory per node.
    slurm = {"SLURM_JOB_ID": "812", "SLURM_NNODES": "2", "SLURM_NODEID": "1"}
    assert default_out("train.py", None, True, slurm) == os.path.join("gpubottle-runs", "train-812", "node1")
    assert default_out("train.py", None, False, {}) is None  # a run of its own: the usual directory
    assert default_out("train.py", None, True, {"SLURM_JOB_ID": "812", "SLURM_NNODES": "1",
                                                "SLURM_NODEID": "0"}) is None


def test_rank_zero_clears_what_an_earlier_job_under_the_same_id_left(tmp_path):
    for name in ("rank0", "rank1", "rank2", "rank3"):
        (tmp_path / name).mkdir()
    for name in (".job-report", "report.json", "stop-at"):
        (tmp_path / name).write_text("old")
    forget_earlier_job(str(tmp_path), 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0", "rank1"]
