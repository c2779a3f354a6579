"""Evidence built by hand for rule tests: what a run with given measurements would have produced."""

from __future__ import annotations

from gpubottle.evidence import CpuEvidence, Evidence, LoaderInfo, MemoryEvidence, RunInfo, StepEvidence


def evidence(
    *, steps: int = 50, step_s: float = 0.1, wait_s: float = 0.0, wait_cpu_s: float | None = None,
    num_workers: int = 0, cores: float = 8.0, tree: float = 1.0, main: float = 1.0,
    per_worker: float | None = None, outside: float = 0.0, torch_threads: int | None = None,
    run_queue: float | None = None, wait_run_queue_s: float | None = None,
    memory: MemoryEvidence | None = None, loader: bool = True, exit_code: int = 0,
    exception: str | None = None,
) -> Evidence:
    st = StepEvidence(
        source="optimizer",
        durations_s=[step_s] * steps,
        input_wait_s=[wait_s] * steps,
        input_wait_cpu_s=[wait_cpu_s] * steps,
        input_wait_run_queue_s=[wait_run_queue_s] * steps,
        warmup=2,
    )
    loaders = []
    if loader:
        loaders.append(LoaderInfo(
            id=1, site="train.py:42", num_workers=num_workers, batch_size=32, dataset_class="Images",
            dataset_getitem="data.py:10", batches=steps, iterators=1, persistent_workers=False,
            prefetch_factor=2 if num_workers else None,
        ))
    cpu = CpuEvidence(
        samples=100, cores_logical=int(cores), cores_available=cores, tree_cores=tree, main_cores=main,
        workers_cores=(per_worker or 0.0) * num_workers if num_workers else None,
        per_worker_cores=per_worker, workers_seen=num_workers, outside_cores=outside,
        torch_threads=torch_threads, per_worker_run_queue=run_queue,
    )
    run = RunInfo(kind="run", exit_code=exit_code, exception=exception)
    return Evidence(run=run, steps=st, loaders=loaders, cpu=cpu, memory=memory)
