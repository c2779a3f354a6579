"""Reading the supervisor's samples.jsonl and attributing processes to roles."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Samples:
    # [t, {pid: cores}, sys_busy, iowait, {pid: fraction of time runnable but waiting for a CPU}]
    cpu: list[list[Any]] = field(default_factory=list)
    # [t, {pid: [pss, uss]}, available, total, swap, cgroup current, cgroup limit, loadavg]
    mem: list[list[Any]] = field(default_factory=list)
    outside: list[list[Any]] = field(default_factory=list)  # [t, cores, top]
    own: list[list[Any]] = field(default_factory=list)  # [t, cores]
    procs: dict[int, list[Any]] = field(default_factory=dict)  # pid -> [ppid, name, cmdline, t]
    bad_lines: int = 0


def read_samples(path: str) -> Samples:
    s = Samples()
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except OSError:
        return s
    with fh:
        for line in fh:
            try:
                rec = json.loads(line)
                kind = rec[0]
            except (ValueError, IndexError):
                s.bad_lines += 1  # a line cut short by a crash
                continue
            if kind == "c":
                s.cpu.append(rec[1:])
            elif kind == "m":
                s.mem.append(rec[1:])
            elif kind == "x":
                s.outside.append(rec[1:])
            elif kind == "s":
                s.own.append(rec[1:])
            elif kind == "p":
                s.procs[int(rec[1])] = rec[2:]
    return s


def worker_pids(samples: Samples, main_pid: int, reported: set[int]) -> set[int]:
    """DataLoader workers: those the probes reported, plus children that look like them (spawned
    through multiprocessing, or forked copies of the main process) in case a report was lost."""
    found = set(reported)
    for pid, (ppid, _name, cmd, _t) in samples.procs.items():
        if ppid != main_pid:
            continue
        spawned = "multiprocessing" in cmd and ("spawn_main" in cmd or "forkserver" in cmd)
        forked = "gpubottle.launch.bootstrap" in cmd  # a fork keeps the main process's command line
        if spawned or forked:
            found.add(pid)
    return found
