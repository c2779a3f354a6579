"""meta.json's record: what was run, where and when, and how it ended. Apart from the end of a run
(commands/finish.py) so that `gpubottle run` writes it before launching the script without first
importing the analysis."""

from __future__ import annotations

import datetime
import os
import platform
from dataclasses import dataclass, field
from typing import Any

from gpubottle.collect.system import CoreBudget, core_budget, cpu_bf16, cpu_fp16
from gpubottle.rundir import RunDir
from gpubottle.serialisable import Serialisable


@dataclass
class RunMeta(Serialisable):
    """meta.json: what was run, where and when, and how it ended (the analysis reads it back as a
    dict, so a key added here reads as missing in older runs)."""

    command: list[str]
    target: str
    module: str | None = None
    args: list[str] = field(default_factory=list)
    nproc_per_node: int | None = None
    in_process: bool = False  # gpubottle.profile(): the profiled code ran in the caller's process
    cwd: str = ""
    started_at: str = ""
    python: str = ""
    platform: str = ""
    cores: CoreBudget | None = None
    cpu_bf16: bool | None = None  # the CPU computes bfloat16 natively (None: it does not say)
    cpu_fp16: bool | None = None  # the CPU computes float16 natively (None: it does not say)
    sample_interval: float | None = None
    # How it ended.
    child_pid: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    duration_s: float | None = None
    # On the clock the script's probes share (CLOCK_MONOTONIC): the run's account starts and ends here.
    started_mono: float | None = None
    ended_mono: float | None = None
    # When `gpubottle run`'s own process started, before it launched the script: its start is a cost
    # of the run (the account's own line), as the script's wait for it.
    process_start_mono: float | None = None
    sampler_errors: list[str] = field(default_factory=list)
    signals_received: list[int] = field(default_factory=list)
    collectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    stop_reason: str | None = None  # duration | interrupted | killed; else read from the events
    # One rank of a job a cluster's launcher started (launch/job.py), and its job folder.
    job: dict[str, Any] | None = None
    # In a notebook: the source of each cell the kernel ran (execution count -> code), so a fix at
    # "cell [N], line M" keeps its context in the report.
    cells: dict[str, str] = field(default_factory=dict)

    @classmethod
    def here(cls, command: list[str], target: str, sample_interval: float, **kwargs: Any) -> RunMeta:
        """A run starting now, on this machine."""
        return cls(command=command, target=target, cwd=os.getcwd(),
                   started_at=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                   python=platform.python_version(), cores=core_budget(),
                   cpu_bf16=cpu_bf16(), cpu_fp16=cpu_fp16(), sample_interval=sample_interval, **kwargs)

    def ended(self, child_pid: int, exit_code: int, started_mono: float, ended_mono: float,
              stop_reason: str | None = None) -> None:
        self.child_pid, self.exit_code = child_pid, exit_code
        self.signal = -exit_code if exit_code < 0 else None
        # From gpubottle's own start where known: the user's run began there (the account says it).
        began = self.process_start_mono
        self.duration_s = round(ended_mono - (began if began is not None and began <= started_mono
                                               else started_mono), 3)
        self.started_mono, self.ended_mono = started_mono, ended_mono
        self.stop_reason = stop_reason

    def at_end(self) -> None:
        """What is read at the end, not the start: platform.platform() runs `uname -p` and reads
        the interpreter's binary (~15 ms the script would wait through at its launch)."""
        self.platform = self.platform or platform.platform()

    def write(self, rd: RunDir) -> None:
        try:
            rd.write_json(rd.meta, self.to_json())
        except OSError:
            pass  # an unwritable run directory loses the metadata, never the script's run
