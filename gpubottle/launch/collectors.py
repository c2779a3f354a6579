"""The supervisor's samplers around one process, started and stopped together: the process tree
always, py-spy's stacks and NVML unless turned off, and the memory watch that asks the script for a
tensor census while memory keeps climbing. One home for `gpubottle run` (the supervisor) and for
`gpubottle.profile()`'s watcher process, which differ only in who started the process.

Every collector fails open: a start or stop that raises is an error in the samples' record, and
its status says what is missing.
"""

from __future__ import annotations

import os
import time
from typing import IO, Any

from gpubottle.collect.budget import CpuBudget
from gpubottle.collect.leakwatch import LeakWatch, request_census, steps_marker
from gpubottle.collect.nvml import NvmlSampler
from gpubottle.collect.process_tree import TreeSampler
from gpubottle.collect.stacks import StackSampler
from gpubottle.collect.system import core_budget
from gpubottle.rundir import RunDir

OWN_SPAN_S = 5.0  # this process's CPU is held against the budget over spans this long
_cpu_clock = time.process_time  # this process's CPU seconds (a fake one in tests)


class Collectors:
    def __init__(self, rd: RunDir, interval: float, stacks: bool = True, stack_rate: int = 10,
                 gpu: bool = True, off: tuple[str, str] = ("--no-stacks", "--no-gpu")) -> None:
        """`off`: how the user turned py-spy and NVML off, for their status."""
        self.rd = rd
        self.interval = interval
        self._off = off
        self._gpu = gpu
        cores = core_budget().available or float(os.cpu_count() or 1)
        self.budget = CpuBudget(cores, time.monotonic())  # py-spy's CPU and ours, within their share
        self.stacks = StackSampler(rd.stacks, rate=stack_rate, budget=self.budget) if stacks else None
        # Files are opened by start() and closed by stop(): a launch that fails in between leaks none.
        self._gpu_out: IO[str] | None = None
        self.nvml: NvmlSampler | None = None
        self._samples: IO[str] | None = None
        self.sampler: TreeSampler | None = None
        self._leaks: LeakWatch | None = None
        self._stepping = False  # the script has reached a step (a census needs one anyway)
        self._own_last: tuple[float, float] | None = None  # when, and this process's CPU seconds then

    @property
    def _extra(self) -> list[Any]:
        return [c for c in (self.stacks, self.nvml) if c is not None]

    def start(self, pid: int, started: float | None = None) -> None:
        """Sample `pid` and its children; `started`: when the process was launched (monotonic)."""
        self.budget.started = time.monotonic() if started is None else started
        self._samples = open(self.rd.samples, "a")  # noqa: SIM115 - closed in stop()
        if self._gpu:
            self._gpu_out = open(self.rd.gpu_samples, "a")  # noqa: SIM115 - closed in stop()
            self.nvml = NvmlSampler(self._gpu_out)
        self.sampler = TreeSampler(pid, self._samples, self.interval)
        self.sampler.on_tick = self.watch  # in the sampler's thread, right after its readings
        self.sampler.start()
        for c in self._extra:
            try:
                c.start(pid)
            except Exception as exc:  # fail open
                self.sampler.errors.append(f"{type(c).__name__}: {exc!r}")
        self._leaks = LeakWatch(time.monotonic() if started is None else started)

    def watch(self, now: float) -> None:
        """After each of the sampler's ticks, in its thread (no wakeup of its own). Memory still
        climbing: ask the script's process which tensors pile up (fails open). Not before its first
        step: start-up's climb (imports, CUDA's start) is no leak. And the run's share of its cores,
        for the budget (collect/budget.py: what py-spy's CPU costs the run)."""
        s, leaks = self.sampler, self._leaks
        if s is None or leaks is None:
            return
        cpu = s.latest.get("cpu")
        if cpu:  # the run's share of its cores: py-spy's CPU costs more where it has none to spare
            self.budget.busy(now, sum(cpu.values()) / max(self.budget.cores, 1e-6))
        self._own_cpu(now)
        if not self._stepping:
            self._stepping = os.path.exists(steps_marker(self.rd.census_request))
            if not self._stepping:
                return
        try:
            rec = s.latest.get("mem")
            if rec is None:
                return
            n = leaks.observe(now, sum(int(v[0]) for v in rec.procs.values()))
            if n is not None:
                request_census(self.rd.census_request, n)
        except Exception as exc:
            s.errors.append(f"leak watch: {exc!r}")

    def _own_cpu(self, now: float) -> None:
        """This process's CPU (the samplers, py-spy's watch and its chunks' conversion) over the last
        OWN_SPAN_S, held against the budget beside py-spy's (CpuBudget.record)."""
        # (the process's CPU clock: /proc's 10-ms ticks over a 5-s span read 0 or 0.2% of a core
        # for the 0.11% the supervisor takes late in a run, against a late budget of 0.3%)
        cpu = _cpu_clock()
        last = self._own_last
        edge = self.budget.early_end  # a span ends there too: the rates change
        if last is None or now - last[0] >= OWN_SPAN_S or last[0] < edge <= now:
            if last is not None:
                self.budget.record("gpubottle", last[0], now, cpu - last[1])
            self._own_last = (now, cpu)

    def stop(self) -> None:
        for c in self._extra:
            try:
                c.stop()
            except Exception as exc:
                self.errors.append(f"{type(c).__name__}: {exc!r}")
        if self.sampler is not None:
            self.sampler.stop()
        for fh in (self._samples, self._gpu_out):
            if fh is not None:
                fh.close()

    @property
    def errors(self) -> list[str]:
        return self.sampler.errors if self.sampler is not None else []

    @property
    def ticks(self) -> int:
        return self.sampler.ticks if self.sampler is not None else 0

    def status(self) -> dict[str, dict[str, object]]:
        """py-spy's and NVML's status for the run's meta: what they got, or why not."""
        stacks_off, gpu_off = self._off
        no_gpu = f"turned off ({gpu_off})" if not self._gpu else "not started"
        return {
            "py-spy": (self.stacks.status() if self.stacks
                       else {"ok": False, "reason": f"turned off ({stacks_off})"}),
            "nvml": self.nvml.status() if self.nvml else {"ok": False, "reason": no_gpu},
        }
