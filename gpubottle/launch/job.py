"""A rank started by a cluster's own launcher: `srun gpubottle run train.py` starts one `gpubottle
run` per rank, each with the rank in its environment, which the script maps itself (RANK and
WORLD_SIZE, Slurm's SLURM_PROCID and SLURM_NTASKS, Open MPI's OMPI_COMM_WORLD_*, PMI's PMI_*).

Such a run is one rank of a job, not a job of its own: it records its rank, the world size, its
node and the job's id, and (without --out) writes into `gpubottle-runs/<script>-<job id>/rank{R}`,
a directory no other rank or node writes to, so that every rank's directory lands under one job
folder on a shared file system. `gpubottle report` on that folder merges them.

A run that launches the ranks itself (torchrun, `--nproc-per-node`) is not a rank: within a Slurm
job each node's launcher writes `.../<script>-<job id>/node{N}` instead.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from gpubottle.rundir import int_env, job_id, safe_name

# (rank, world size, local rank, launcher), most specific first: the variables torch.distributed
# reads, then what Slurm, Open MPI and PMI-based MPIs set for each task.
_SPELLINGS = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "env"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "srun"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "mpirun"),
)
# The launchers of ranks that each have a `gpubottle run` and a run directory of their own (their
# files are named as a single process's); torchrun's and mp.spawn's ranks write into their
# launcher's directory instead.
OWN_DIRECTORY_LAUNCHERS = ("env", "srun", "mpirun", "init_process_group")
# Launchers whose processes are the ranks' parents, never ranks themselves.
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch",
                    "deepspeed.launcher.runner")
LAUNCHER_SCRIPTS = ("torchrun", "accelerate", "deepspeed")


@dataclass(frozen=True)
class JobRank:
    rank: int
    world_size: int
    local_rank: int | None
    node: str
    job_id: str
    launcher: str  # env | srun | mpirun

    def wire(self) -> dict[str, Any]:
        """The RankStart record's fields."""
        return {"rank": self.rank, "local_rank": self.local_rank, "world_size": self.world_size,
                "node": self.node, "launcher": self.launcher, "job": self.job_id}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def job_rank(env: Mapping[str, str] | None = None) -> JobRank | None:
    """This process as one rank of a bigger job, from its environment (None when it is not one)."""
    env = os.environ if env is None else env
    for r, w, lr, launcher in _SPELLINGS:
        rank, world = int_env(r, env), int_env(w, env)
        if rank is None or world is None or world < 2 or not 0 <= rank < world:
            continue
        local = int_env(lr, env)
        if local is None:
            local = int_env("LOCAL_RANK", env)
        if launcher == "env" and (env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")):
            launcher = "srun"
        return JobRank(rank, world, local, socket.gethostname(), job_id(env), launcher)
    return None


def launches_ranks(script: str | None, module: str | None, nproc_per_node: int | None) -> bool:
    """The target is a launcher: its children are the ranks."""
    if nproc_per_node is not None or (module is not None and module in LAUNCHER_MODULES):
        return True
    return script is not None and os.path.basename(script) in LAUNCHER_SCRIPTS


def job_folder(target: str, job: str) -> str:
    stem = os.path.splitext(os.path.basename(target))[0]
    return os.path.join("gpubottle-runs", f"{safe_name(stem, 'job')}-{safe_name(job, 'job')}")


def forget_earlier_job(folder: str, world_size: int) -> None:
    """Rank 0, starting: what an earlier job under the same id left in its folder (the job's claim
    and report, the agreed stop step, the directories of ranks this job does not have) goes; the
    ranks' own directories are cleared by each rank as it starts."""
    for name in (".job-report", "report.json", "stop-at"):
        try:
            os.remove(os.path.join(folder, name))
        except OSError:
            pass
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"rank(\d+)", name)
        if m and int(m.group(1)) >= world_size:
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def default_out(target: str, rank: JobRank | None, launcher: bool,
                env: Mapping[str, str] | None = None) -> str | None:
    """The run directory a rank (or a node's launcher in a Slurm job) writes when --out is not
    given; None for a run of its own (the usual time-stamped directory)."""
    env = os.environ if env is None else env
    if rank is not None:
        return os.path.join(job_folder(target, rank.job_id), f"rank{rank.rank}")
    slurm = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    nodes = int_env("SLURM_NNODES", env) or int_env("SLURM_JOB_NUM_NODES", env)
    node = int_env("SLURM_NODEID", env)
    if launcher and slurm and nodes and nodes > 1 and node is not None:
        return os.path.join(job_folder(target, job_id(env)), f"node{node}")
    return None
