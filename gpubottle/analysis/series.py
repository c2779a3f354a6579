"""Time series of a saved run for pictures (the HTML report, the Perfetto timeline).

Read from the run directory's raw records, on the run's own clock (seconds since the script
started). The full data stays in the run directory; the pictures downsample it for display.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gpubottle.analysis.phases import carve, loop_saves
from gpubottle.analysis.samples import loader_workers, read_samples
from gpubottle.analysis.steps import input_waits
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.collect.system import CoreBudget
from gpubottle.rundir import RunDir
from gpubottle.units import device_label
from gpubottle.wire import GpuDevices, GpuSample, read_records

Points = list[tuple[float, float]]


@dataclass
class RunSeries:
    t0: float = 0.0  # the script's start, on CLOCK_MONOTONIC
    pid: int = 0  # the script's process
    steps: list[tuple[float, float]] = field(default_factory=list)  # (start, end), monotonic
    waits: list[float] = field(default_factory=list)  # input wait inside each step, seconds
    batches: list[tuple[float, float]] = field(default_factory=list)  # DataLoader waits, monotonic
    cpu: dict[str, Points] = field(default_factory=dict)  # role -> (t, cores)
    cores: float | None = None
    memory: dict[str, Points] = field(default_factory=dict)  # role -> (t, bytes)
    gpu: dict[str, Points] = field(default_factory=dict)  # "GPU 0 busy" -> (t, fraction)
    pcie: dict[str, Points] = field(default_factory=dict)  # "GPU 0 to host" -> (t, bytes/s)
    marks: list[tuple[float, str]] = field(default_factory=list)  # (t, label)
    # Evaluation passes and checkpoints: (start, end, label), monotonic.
    phases: list[tuple[float, float, str]] = field(default_factory=list)
    window: tuple[float, float] | None = None  # the profiler window, monotonic

    def rel(self, t: float) -> float:
        return t - self.t0


def run_series(rd: RunDir, events: ChildEvents | None = None) -> RunSeries:
    ev = events if events is not None else read_events(rd.events)
    out = RunSeries(t0=float(ev.start.t) if ev.start else 0.0, pid=int(ev.start.pid) if ev.start else 0)
    out.steps = list(ev.clock.intervals())
    carved = carve(ev)
    batches = sorted(ev.batches, key=lambda b: b.t0)
    out.batches = [(float(b.t0), float(b.t1)) for b in batches]
    out.waits = input_waits(out.steps, carved.training_batches(batches))[0]
    sites = {int(lid): cfg.get("site") for lid, cfg in ev.loaders.items()}
    out.phases = [(p.t0, p.t1, f"evaluation (DataLoader at {sites.get(p.loader) or '?'})")
                  for p in carved.evals]
    out.phases += [(float(s.t0), float(s.t1), f"checkpoint ({s.what} at {s.site or '?'})")
                   for s in loop_saves(ev)]
    if ev.window_started is not None:
        end = ev.window_saved.t if ev.window_saved is not None else ev.window_started.t
        out.window = (float(ev.window_started.t), float(end))
    if ev.stop is not None:
        out.marks.append((float(ev.stop.t), f"stopped ({ev.stop.reason})"))
    for p in ev.perturbed:
        out.marks.append((float(p.t0), p.what))
    _cpu_and_memory(rd, ev, out)
    _gpu(rd, out)
    return out


def _cpu_and_memory(rd: RunDir, ev: ChildEvents, out: RunSeries) -> None:
    if not os.path.isfile(rd.samples):
        return
    s = read_samples(rd.samples)
    main = int(ev.start.pid) if ev.start else -1
    workers = loader_workers(s, main, ev)
    budget = rd.read_meta().get("cores") or {}
    out.cores = CoreBudget(budget.get("logical"), budget.get("affinity"),
                           budget.get("cgroup_quota")).available
    roles: dict[str, Points] = {"main process": [], "loader workers": [], "other programs": []}
    for c in s.cpu:
        t = float(c.t)
        roles["main process"].append((t, float(c.cores.get(str(main), 0.0))))
        roles["loader workers"].append((t, sum(float(v) for k, v in c.cores.items()
                                               if int(k) in workers)))
    for o in s.outside:
        roles["other programs"].append((float(o.t), float(o.cores)))
    out.cpu = {k: v for k, v in roles.items() if v}
    mem: dict[str, Points] = {"main process (PSS)": [], "loader workers (PSS)": [], "available": []}
    for m in s.mem:
        t = float(m.t)
        mem["main process (PSS)"].append((t, float((m.procs.get(str(main)) or [0])[0])))
        mem["loader workers (PSS)"].append((t, float(sum(v[0] for k, v in m.procs.items()
                                                         if int(k) in workers))))
        mem["available"].append((t, float(m.available)))
    out.memory = {k: v for k, v in mem.items() if v}


def _gpu(rd: RunDir, out: RunSeries) -> None:
    if not os.path.isfile(rd.gpu_samples):
        return
    records, _bad = read_records(rd.gpu_samples)
    names: dict[int, str] = {}
    for rec in records:
        if isinstance(rec, GpuDevices):
            for d in rec.devices:
                key = int(d.get("key", d["index"]))
                names[key] = device_label(int(d["index"]), d.get("mig"))
        elif isinstance(rec, GpuSample):
            for key, values in rec.devices:
                name = names.get(int(key), f"GPU {key}")
                if values.get("util") is not None:
                    out.gpu.setdefault(f"{name} busy", []).append((float(rec.t), values["util"] / 100))
                for key_, label in (("pcie_rx", "host to GPU"), ("pcie_tx", "GPU to host")):
                    if values.get(key_) is not None:  # NVML's KB/s
                        out.pcie.setdefault(f"{name} {label}", []).append(
                            (float(rec.t), float(values[key_]) * 1024))
                if values.get("mem_used") and values.get("mem_total"):
                    out.gpu.setdefault(f"{name} memory", []).append(
                        (float(rec.t), values["mem_used"] / values["mem_total"]))
