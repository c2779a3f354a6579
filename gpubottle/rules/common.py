"""Small helpers the rules share: the measured window and number formatting."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle.evidence import Evidence, LoaderInfo
from gpubottle.rules import thresholds as th


@dataclass
class Window:
    """The measured steps: warm-up, pauses and steps under gpubottle's heavier probes left out."""

    n: int
    total_s: float
    wait_s: float
    wait_cpu_s: float | None
    mean_step_s: float
    mean_wait_s: float

    @property
    def wait_share(self) -> float:
        return self.wait_s / self.total_s if self.total_s > 0 else 0.0

    @property
    def compute_s(self) -> float:
        """Mean time per step not spent waiting for input."""
        return max(1e-9, self.mean_step_s - self.mean_wait_s)


def window(ev: Evidence) -> Window | None:
    """The measured steps' totals (which steps: StepEvidence.measured, the one definition)."""
    st = ev.steps
    keep = st.measured()
    if not keep:
        return None
    d = [st.durations_s[i] for i in keep]
    w = [st.input_wait_s[i] for i in keep] if st.input_wait_s else [0.0] * len(d)
    c = [st.input_wait_cpu_s[i] for i in keep] if st.input_wait_cpu_s else []
    cpu_vals = [x for x in c if x is not None]
    total, wait = sum(d), sum(w)
    return Window(
        n=len(d),
        total_s=total,
        wait_s=wait,
        wait_cpu_s=sum(cpu_vals) if cpu_vals else None,
        mean_step_s=total / len(d),
        mean_wait_s=wait / len(d),
    )


def min_steps(ev: Evidence) -> int:
    return th.MIN_TRACE_STEPS if ev.run.kind == "trace" else th.MIN_MEASURED_STEPS


def enough_steps(ev: Evidence, w: Window | None) -> bool:
    return w is not None and w.n >= min_steps(ev)


def main_loader(ev: Evidence) -> LoaderInfo | None:
    loaders = [lo for lo in ev.loaders if lo.batches > 0]
    return max(loaders, key=lambda lo: lo.batches) if loaders else None


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else f"{x:.1%}"


def gib(n: float) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= (1 << 30) else f"{n / (1 << 20):.0f} MiB"


def cores(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x < 10 else f"{x:.0f}"


def duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
