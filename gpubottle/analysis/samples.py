"""Reading the supervisor's samples.jsonl and attributing processes to roles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.collect.events import ChildEvents
from gpubottle.collect.stacks import is_loader_worker
from gpubottle.wire import CpuSample, MemSample, OutsideSample, OwnSample, ProcSeen, ThreadsCpu, read_records


@dataclass
class Samples:
    cpu: list[CpuSample] = field(default_factory=list)
    mem: list[MemSample] = field(default_factory=list)
    outside: list[OutsideSample] = field(default_factory=list)
    own: list[OwnSample] = field(default_factory=list)
    procs: dict[int, ProcSeen] = field(default_factory=dict)
    threads: list[ThreadsCpu] = field(default_factory=list)  # the script's process's threads' CPU
    bad_lines: int = 0


def read_samples(path: str) -> Samples:
    s = Samples()
    records, s.bad_lines = read_records(path)  # a line cut short by a crash is counted, not fatal
    for rec in records:
        if isinstance(rec, CpuSample):
            s.cpu.append(rec)
        elif isinstance(rec, MemSample):
            s.mem.append(rec)
        elif isinstance(rec, OutsideSample):
            s.outside.append(rec)
        elif isinstance(rec, OwnSample):
            s.own.append(rec)
        elif isinstance(rec, ProcSeen):
            s.procs[int(rec.pid)] = rec
        elif isinstance(rec, ThreadsCpu):
            s.threads.append(rec)
    return s


def worker_pids(samples: Samples, main_pid: int, reported: set[int]) -> set[int]:
    """DataLoader workers: those the probes reported, plus children that look like them (spawned
    through multiprocessing, or forked copies of the main process) in case a report was lost."""
    found = set(reported)
    found.update(pid for pid, p in samples.procs.items() if is_loader_worker(p.cmdline, main_pid, p.ppid))
    return found


def loader_workers(samples: Samples, main_pid: int, ev: ChildEvents) -> set[int]:
    """The DataLoader workers: those the probes reported at each epoch's start, and children that
    look like workers only where a report may be missing. A process of the script's own, forked
    from the main one (a producer, a logger's uploader), is no loader's worker: counted as one, a
    busy uploader made a loader look busy (0.85 of a core) and was planned for."""
    reported = ev.worker_pids()
    if not ev.loaders:
        return reported
    with_workers = {lid for lid, cfg in ev.loaders.items() if (cfg.get("num_workers") or 0) > 0}
    iters = [it for it in ev.iters if it.loader in with_workers]
    if iters and all(it.worker_pids for it in iters):
        return reported
    return worker_pids(samples, main_pid, reported)


def subtree(samples: Samples, root: int) -> set[int]:
    """root and every process seen below it."""
    kids: dict[int, list[int]] = {}
    for p in samples.procs.values():
        kids.setdefault(int(p.ppid), []).append(int(p.pid))
    found, todo = {root}, [root]
    while todo:
        for kid in kids.get(todo.pop(), []):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return found


def only_processes(samples: Samples, pids: set[int]) -> Samples:
    """The samples as if only `pids` had run in the tree (one rank of a job: the other ranks are
    neither its workers nor its children); machine-wide numbers stay as they were."""
    keep = {str(p) for p in pids}

    def part(d: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if d is None else {k: v for k, v in d.items() if k in keep}

    return Samples(
        cpu=[r._replace(cores=part(r.cores) or {}, run_queue=part(r.run_queue) or {},
                        main_thread=part(r.main_thread)) for r in samples.cpu],
        mem=[r._replace(procs=part(r.procs) or {}) for r in samples.mem],
        outside=samples.outside, own=samples.own,
        procs={pid: p for pid, p in samples.procs.items() if pid in pids},
        threads=[r for r in samples.threads if int(r.pid) in pids],
        bad_lines=samples.bad_lines,
    )
