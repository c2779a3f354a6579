"""Reading the event file the script's probes write, whole or incrementally (for the live status)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChildEvents:
    """Everything the probes reported, grouped by kind; see probes/torch_hooks.py for the shapes."""

    start: list[Any] | None = None
    end: list[Any] | None = None
    stop: list[Any] | None = None
    torch: list[Any] | None = None
    loaders: dict[int, dict[str, Any]] = field(default_factory=dict)
    iters: list[list[Any]] = field(default_factory=list)  # [loader_id, t, worker_pids]
    batches: list[list[Any]] = field(default_factory=list)  # [loader_id, t0, t1, cpu, ended]
    opt_steps: list[list[Any]] = field(default_factory=list)  # [opt_id, t]
    optimizers: list[list[Any]] = field(default_factory=list)  # [opt_id, class, site]
    backwards: list[list[Any]] = field(default_factory=list)  # [t0, t1]
    collectors: dict[str, str | None] = field(default_factory=dict)
    cuda_peak: list[Any] | None = None  # [t, device, peak allocated, peak reserved] at step boundaries
    cuda_end: list[Any] | None = None  # the allocator's own counters at the end
    oom: str | None = None
    window: list[list[Any]] = field(default_factory=list)
    sync_sites: list[list[Any]] = field(default_factory=list)  # [file:line, calls per step]
    snapshot: list[Any] | None = None
    census: dict[str, list[Any]] = field(default_factory=dict)  # moment -> [step, contents]
    perturbed: list[list[Any]] = field(default_factory=list)  # [t0, t1, what]: our own probes ran
    leak_censuses: list[list[Any]] = field(default_factory=list)  # [n, step, t, cost, groups, holder]
    cuda_series: list[list[Any]] = field(default_factory=list)  # [t, step, allocated, reserved]
    bad_lines: int = 0

    def add(self, ev: list[Any]) -> None:
        kind, rest = ev[0], ev[1:]
        if kind == "b":
            self.batches.append(rest)
        elif kind == "o":
            self.opt_steps.append(rest)
        elif kind == "w":
            self.backwards.append(rest)
        elif kind == "iter":
            self.iters.append(rest)
        elif kind == "loader":
            self.loaders[int(rest[0]["id"])] = rest[0]
        elif kind == "opt":
            self.optimizers.append(rest)
        elif kind == "collectors":
            self.collectors.update(rest[0])
        elif kind in ("start", "end", "stop", "torch"):
            setattr(self, kind, rest)
        elif kind == "cmem":
            self.cuda_peak = rest
        elif kind == "cmem_end":
            self.cuda_end = rest
        elif kind == "oom":
            self.oom = str(rest[0])
        elif kind == "window":
            self.window.append(rest)
        elif kind == "syncs":
            self.sync_sites = rest[1]
        elif kind == "syncs-failed":
            self.collectors["sync-sites"] = str(rest[0])
        elif kind == "snapshot":
            self.snapshot = rest
        elif kind == "census":
            self.census[str(rest[0])] = rest[1:]
        elif kind == "perturb":
            self.perturbed.append(rest)
        elif kind == "cmem_t":
            self.cuda_series.append(rest)
        elif kind == "leak":
            self.leak_censuses.append(rest)

    def worker_pids(self) -> set[int]:
        return {int(p) for it in self.iters for p in (it[2] or []) if p}


class EventTail:
    """Reads complete new lines from a file that another process appends to, handing each event to a
    sink (a ChildEvents that keeps everything, or the live status's bounded tracker)."""

    def __init__(self, path: str, sink: Any = None) -> None:
        self.path = path
        self.events = sink if sink is not None else ChildEvents()
        self._offset = 0
        self._partial = b""

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except OSError:
            return 0
        if not chunk:
            return 0
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if not line:
                continue
            try:
                self.events.add(json.loads(line))
            except (ValueError, IndexError, KeyError, TypeError):
                self.events.bad_lines += 1
        return len(lines)


def read_events(path: str) -> ChildEvents:
    events = ChildEvents()
    EventTail(path, events).poll()
    return events
