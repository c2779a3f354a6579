"""Reading the supervisor's samples.jsonl and attributing processes to roles."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubottle.collect.stacks import is_loader_worker
from gpubottle.wire import CpuSample, MemSample, OutsideSample, OwnSample, ProcSeen, read_records


@dataclass
class Samples:
    cpu: list[CpuSample] = field(default_factory=list)
    mem: list[MemSample] = field(default_factory=list)
    outside: list[OutsideSample] = field(default_factory=list)
    own: list[OwnSample] = field(default_factory=list)
    procs: dict[int, ProcSeen] = field(default_factory=dict)
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
    return s


def worker_pids(samples: Samples, main_pid: int, reported: set[int]) -> set[int]:
    """DataLoader workers: those the probes reported, plus children that look like them (spawned
    through multiprocessing, or forked copies of the main process) in case a report was lost."""
    found = set(reported)
    found.update(pid for pid, p in samples.procs.items() if is_loader_worker(p.cmdline, main_pid, p.ppid))
    return found
