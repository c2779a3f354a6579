"""Typed options for `gpubottle run` and `gpubottle.profile()`, and the settings the supervisor hands to
the script's process.

Built and validated in the CLI before anything is created (a bad value leaves no run directory
behind); every default is written here once and read by the CLI's help, the supervisor and the
child.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from gpubottle.errors import EXIT_USAGE, GpubottleError

WINDOW_MODES = ("auto", "on", "off")
DEFAULT_SAMPLE_HZ = 5.0  # the process tree in a run's first 10 s (collect/process_tree.py: later, fewer)
DEFAULT_STACK_RATE = 10  # py-spy samples a second in a run's first 15 s (collect/stacks.py: later, fewer)
DEFAULT_WINDOW_START = 10
DEFAULT_WINDOW_STEPS = 5
DEFAULT_FLUSH_INTERVAL_S = 0.5
DEFAULT_TRIAL_STEPS = 40
DEFAULT_TRIAL_SECONDS = 30.0
DEFAULT_TRIAL_ROUNDS = 2
TRIAL_ENV = "GPUBOTTLE_TRIAL"  # a --try-fixes trial run's setting, in the run's environment


@dataclass(frozen=True)
class WindowConfig:
    """The torch.profiler window: which step it opens at, how many it records, where it writes."""

    start: int = DEFAULT_WINDOW_START
    steps: int = DEFAULT_WINDOW_STEPS
    path: str = ""
    force: bool = False  # also on a CPU-only run (--profile-window on)


@dataclass
class RunOptions:
    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)
    out: str | None = None
    json_path: str | None = None
    html_path: str | None = None
    patch_path: str | None = None
    steps: int | None = None
    duration: float | None = None
    live_status: bool = True
    sample_hz: float = DEFAULT_SAMPLE_HZ
    stacks: bool = True
    stack_rate: int = DEFAULT_STACK_RATE
    window: str = "auto"
    window_start: int = DEFAULT_WINDOW_START
    window_steps: int = DEFAULT_WINDOW_STEPS
    gpu: bool = True
    memory_snapshot: bool = False
    try_fixes: bool = False
    trial_steps: int = DEFAULT_TRIAL_STEPS
    trial_seconds: float = DEFAULT_TRIAL_SECONDS
    trial_rounds: int = DEFAULT_TRIAL_ROUNDS
    yes: bool = False
    nproc_per_node: int | None = None  # launch the script through torchrun with this many ranks
    torchrun_args: list[str] = field(default_factory=list)  # more of torchrun's own options

    @property
    def target(self) -> str:
        return self.script or str(self.module)

    def launch(self) -> tuple[str | None, str | None, list[str]]:
        """(script, module, arguments) the script's process runs: under --nproc-per-node, the
        real launcher, torch.distributed.run, with the script as its argument."""
        if self.nproc_per_node is None:
            return self.script, self.module, self.args
        target = [self.script] if self.script else ["-m", str(self.module)]
        return None, "torch.distributed.run", [
            f"--nproc-per-node={self.nproc_per_node}", *self.torchrun_args, *target, *self.args]

    def validate(self) -> None:
        """Every check that needs no file system: usage errors (exit 2) before anything is made."""
        if self.script is None and self.module is None:
            _usage("no script given: gpubottle run train.py [ARGS...]")
        if self.steps is not None and self.steps < 1:
            _usage("--steps must be at least 1")
        if self.duration is not None and self.duration <= 0:
            _usage("--duration must be positive")
        if not 1 <= self.sample_hz <= 100:
            _usage("--sample-hz must be between 1 and 100")
        if not 1 <= self.stack_rate <= 1000:
            _usage("--stack-rate must be between 1 and 1000")
        if self.window not in WINDOW_MODES:
            _usage(f"--profile-window must be {', '.join(WINDOW_MODES[:-1])} or {WINDOW_MODES[-1]}")
        if self.window_start < 1:
            _usage("--window-start must be at least 1")
        if self.window_steps < 1:
            _usage("--window-steps must be at least 1")
        if self.trial_steps < 10:
            _usage("--trial-steps must be at least 10 (a warm-up and enough steps to measure)")
        if self.trial_seconds <= 0:
            _usage("--trial-seconds must be positive")
        if not 1 <= self.trial_rounds <= 10:
            _usage("--trial-rounds must be between 1 and 10")
        if self.nproc_per_node is not None and self.nproc_per_node < 1:
            _usage("--nproc-per-node must be at least 1")
        if self.torchrun_args and self.nproc_per_node is None:
            _usage("--torchrun-args goes with --nproc-per-node")
        if self.try_fixes and self.nproc_per_node is not None:
            _usage("--try-fixes times single-process runs; it does not run multi-process jobs yet")

    def window_config(self, path: str) -> WindowConfig | None:
        if self.window == "off":
            return None
        return WindowConfig(start=self.window_start, steps=self.window_steps, path=path,
                            force=self.window == "on")


def _usage(message: str) -> None:
    raise GpubottleError(message, EXIT_USAGE)


@dataclass
class ProfileOptions:
    """`gpubottle.profile()`'s options, shared by its decorator form and `%%gpubottle`."""

    out: str | None = None  # the run directory (default gpubottle-runs/<name>-<time>)
    json: str | None = None  # also write the report JSON here
    html: str | None = None  # also write the HTML report here
    stacks: bool = True  # sample stacks with py-spy
    gpu: bool = True  # sample NVML
    name: str = "profile"
    show: bool = True  # print the report at the end (the HTML report inline in a notebook)
    stream: IO[str] | None = None  # where to print it (default stderr)
    sample_hz: float = DEFAULT_SAMPLE_HZ
    stack_rate: int = DEFAULT_STACK_RATE


@dataclass
class ChildConfig:
    """What the script's process needs, passed in one environment variable as JSON."""

    events: str
    script: str | None = None
    module: str | None = None
    steps: int | None = None
    duration: float | None = None
    window: WindowConfig | None = None
    snapshot: str | None = None  # where to dump a CUDA memory snapshot (GPU runs, on request)
    census_request: str | None = None  # the file through which the supervisor asks for a census
    flush_interval: float = DEFAULT_FLUSH_INTERVAL_S
    trial: dict[str, Any] | None = None  # a --try-fixes trial's change (probes/trial.py)
    rank: dict[str, Any] | None = None  # wire.RankStart's fields, in a rank of a multi-process job
    stop_at: str | None = None  # a rank's --duration: the file naming the step all ranks stop at

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, raw: str) -> ChildConfig:
        data: dict[str, Any] = json.loads(raw)
        win = data.pop("window", None)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known, window=WindowConfig(**win) if isinstance(win, dict) else None)
