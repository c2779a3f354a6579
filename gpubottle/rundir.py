"""The run directory: everything one `gpubottle run` collected, written as it goes.

  meta.json       what ran, when, and how it ended (rewritten at the end)
  events.jsonl    the script's probes (DataLoader waits, steps), flushed twice a second
  events-rank{R}.jsonl, profiler-window-rank{R}.pt.trace.json, evidence-rank{R}.json
                  the same for each rank of a multi-process job (torchrun, mp.spawn); events.jsonl
                  is then the launcher's
  stop-at         the step at which every rank stops for --duration (ranks must stop together)
  samples.jsonl   the supervisor's psutil samples, flushed once a second
  stacks/         py-spy samples, when taken
  gpu.jsonl       NVML samples of the GPUs the script may use, when there are any
  profiler-window.pt.trace.json   torch.profiler trace of a few steps (GPU runs; opens in Perfetto)
  census-request  written by the supervisor when memory keeps climbing: asks for a tensor census
  traceback.txt   the whole traceback when the script raised (the terminal shows it as plain python
                  would, from the script's own frames)
  evidence.json   everything above, summarised (written at the end)
  report.json     the verdict, in the report contract (written at the end)
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpubottle import jsonio
from gpubottle.errors import EXIT_USAGE, GpubottleError


@dataclass
class RunDir:
    path: str

    @property
    def meta(self) -> str:
        return os.path.join(self.path, "meta.json")

    @property
    def events(self) -> str:
        return os.path.join(self.path, "events.jsonl")

    @property
    def samples(self) -> str:
        return os.path.join(self.path, "samples.jsonl")

    @property
    def stacks(self) -> str:
        return os.path.join(self.path, "stacks")

    @property
    def gpu_samples(self) -> str:
        return os.path.join(self.path, "gpu.jsonl")

    @property
    def window_trace(self) -> str:
        return os.path.join(self.path, "profiler-window.pt.trace.json")

    def rank_events(self, rank: int) -> str:
        return os.path.join(self.path, f"events-rank{rank}.jsonl")

    def rank_window(self, rank: int) -> str:
        return os.path.join(self.path, f"profiler-window-rank{rank}.pt.trace.json")

    def rank_evidence(self, rank: int) -> str:
        return os.path.join(self.path, f"evidence-rank{rank}.json")

    def ranks(self) -> list[int]:
        """The ranks that wrote events here, in order."""
        try:
            names = os.listdir(self.path)
        except OSError:
            return []
        found = (re.fullmatch(r"events-rank(\d+)\.jsonl", n) for n in names)
        return sorted(int(m.group(1)) for m in found if m)

    @property
    def stop_at(self) -> str:
        return os.path.join(self.path, "stop-at")

    @property
    def census_request(self) -> str:
        return os.path.join(self.path, "census-request")

    @property
    def evidence(self) -> str:
        return os.path.join(self.path, "evidence.json")

    @property
    def report(self) -> str:
        return os.path.join(self.path, "report.json")

    def write_json(self, path: str, data: Any) -> None:
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            jsonio.write(fh, data, indent=1)
        os.replace(tmp, path)

    def read_meta(self) -> dict[str, Any]:
        try:
            with open(self.meta) as fh:
                data: dict[str, Any] = json.load(fh)
                return data
        except (OSError, ValueError):
            return {}

    def is_run(self) -> bool:
        return os.path.isfile(self.meta) or os.path.isfile(self.events)


# What a run writes into its directory: an earlier run's copies are removed when --out names the
# same directory again (a stale rank's events or stack chunk would be read as this run's). Nothing
# else in the directory is touched.
_OURS = re.compile(r"(events(-rank\d+)?\.jsonl|evidence(-rank\d+)?\.json|profiler-window(-rank\d+)?"
                   r"\.pt\.trace\.json|cuda-memory-snapshot(-rank\d+)?\.pickle|samples\.jsonl|gpu\.jsonl|"
                   r"meta\.json|report\.json|index\.html|timeline\.json|stop-at|census-request|"
                   r"traceback(-rank\d+)?\.txt)")
_STACK_FILES = re.compile(r"chunks\.jsonl|profile\.speedscope\.json|"
                          r"chunk-\d+-\d+\.speedscope\.json(\.chrometrace)?")


def _forget_earlier_run(path: str) -> None:
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if _OURS.fullmatch(name) and os.path.isfile(full):
            os.remove(full)
    stacks = os.path.join(path, "stacks")
    if os.path.isdir(stacks):
        for name in os.listdir(stacks):
            if _STACK_FILES.fullmatch(name):
                os.remove(os.path.join(stacks, name))


def safe_name(text: str, empty: str) -> str:
    """`text` as a file name part: what is not a letter, digit, '_', '.' or '-' becomes '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or empty


def int_env(name: str, env: Mapping[str, str] | None = None) -> int | None:
    """An integer from the environment (None when absent or not a number)."""
    try:
        return int((os.environ if env is None else env)[name])
    except (KeyError, ValueError):
        return None


def new_run_dir(target: str, out: str | None) -> RunDir:
    """`out` when given (created if needed), else gpubottle-runs/<name>-<time> in the working directory."""
    if out is None:
        stem = safe_name(os.path.splitext(os.path.basename(target))[0], "run")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = os.path.join("gpubottle-runs", f"{stem}-{stamp}")
        path, n = base, 1
        while os.path.exists(path):
            n += 1
            path = f"{base}-{n}"
    else:
        path = out
    try:
        os.makedirs(path, exist_ok=True)
        _forget_earlier_run(path)
        for name in ("events.jsonl", "samples.jsonl"):
            open(os.path.join(path, name), "w").close()
    except OSError as exc:
        raise GpubottleError(f"cannot create the run directory {path}: {exc.strerror}", EXIT_USAGE) from exc
    return RunDir(path)


def job_id(env: Mapping[str, str]) -> str:
    """The job's id as every rank of it sees the same: Slurm's job (and step), torchrun's run id,
    Open MPI's job, else the rendezvous endpoint the ranks meet at."""
    slurm = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if slurm:
        step = env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID")
        return f"{slurm}.{step}" if step else slurm
    for name in ("TORCHELASTIC_RUN_ID", "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid", "PMI_JOBID"):
        if env.get(name):
            return str(env[name])
    addr, port = env.get("MASTER_ADDR"), env.get("MASTER_PORT")
    if addr and port:
        return f"{addr}-{port}"
    return "job"
