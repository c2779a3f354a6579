"""What `--try-fixes` measured: each setting's step times over bounded runs of the script."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.serialisable import Serialisable

HELD_SHARE = 0.8  # a prediction held when the measured speed-up reached this share of it


def setting_label(change: dict[str, Any]) -> str:
    """How a setting is named everywhere: progress lines, the table, the fixes, the HTML."""
    if not change:
        return "as written"
    if change.get("replay"):
        return "input free (bound)"
    return ", ".join("batch_size=None with a BatchSampler" if k == "batch_index" else f"{k}={v}"
                     for k, v in change.items())


def change_text(name: str, old: Any, new: Any) -> str:
    """One changed setting of a fix, as the report shows it under the fix."""
    if name == "batch_index":
        return "whole batches indexed: batch_size=None, sampler=BatchSampler(...)" if new else name
    return f"{name}={old!r} -> {new!r}" if name.isidentifier() else f"{name}: {old} -> {new}"


@dataclass
class Trial(Serialisable):
    """One setting timed by `--try-fixes` in bounded runs of the script (change {} = baseline)."""

    change: dict[str, Any]
    steps: int = 0  # measured steps, all rounds together
    rounds: int = 0
    median_s: float | None = None
    interval_s: list[float] | None = None  # 95% interval of the median step
    mean_s: float | None = None  # what the speed-up compares: the run's pace, bursts included
    mean_interval_s: list[float] | None = None
    speedup: float | None = None  # baseline mean step / this mean step
    speedup_interval: list[float] | None = None
    predicted_speedup: float | None = None  # what the fix promised, when it promised a number
    failed: str | None = None  # why this setting has no measurement (the script's exit, ...)
    short: bool = False  # the script ended before the span that shows the workers' steady pace
    # The fastest step its workers can make batches for (the model's production limit), when the
    # measured one was well under it: those steps ran from batches made ahead.
    beyond: float | None = None
    unresolved: bool = False  # still within the noise after the extra rounds

    @property
    def held(self) -> bool | None:
        """Whether the fix's printed prediction held when timed (None: it promised no number)."""
        if not self.predicted_speedup or self.speedup is None:
            return None
        return self.speedup >= HELD_SHARE * self.predicted_speedup


@dataclass
class TrialsEvidence(Serialisable):
    trials: list[Trial] = field(default_factory=list)  # the baseline first
    upper_bound: Trial | None = None  # input replayed from memory: what no input fix can beat
    steps_per_round: int = 0
    best: dict[str, Any] | None = None  # the change that measured fastest, when clearly faster
