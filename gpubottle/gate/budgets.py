"""Budgets: pure checks of a current report (against a baseline) into pass / fail / inconclusive."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubottle import vocabulary as v
from gpubottle.gate.stats import compare
from gpubottle.report import Report
from gpubottle.rules.common import min_steps
from gpubottle.units import gib, ms

PASS, FAIL, INCONCLUSIVE, SKIPPED = "pass", "fail", "inconclusive", "skipped"


@dataclass
class GateConfig:
    max_regression: float | None = 0.05  # fraction: 0.05 = at most 5% slower per step
    forbid: list[str] = field(default_factory=list)
    min_gpu_busy: float | None = None  # fraction of step time with kernels running
    max_peak_memory: int | None = None  # bytes: GPU reserved where known, else the run's host PSS


@dataclass
class BudgetResult:
    name: str
    status: str  # pass | fail | inconclusive | skipped
    measured: str
    limit: str
    message: str


def _enough(report: Report) -> bool:
    ev = report.evidence
    return len(ev.measured_durations()) >= min_steps(ev)


def step_time(current: Report, baseline: Report | None, budget: float) -> BudgetResult:
    name = "step time"
    limit = f"<= +{budget:.0%} vs baseline"
    if baseline is None:
        return BudgetResult(name, SKIPPED, "-", limit, "no baseline given")
    # Per-step performance: measured steps without the long pauses (validation, checkpoints).
    cur, base = current.evidence.measured_durations(), baseline.evidence.measured_durations()
    if not cur or not base:
        side = "current" if not cur else "baseline"
        return BudgetResult(name, INCONCLUSIVE, "-", limit, f"the {side} has no measured steps")
    c = compare(cur, base)
    measured = f"{c.ratio - 1:+.1%} ({ms(sum(cur) / len(cur))} vs {ms(sum(base) / len(base))})"
    verdict = c.verdict(budget)
    interval = f"95% interval {c.low - 1:+.1%} .. {c.high - 1:+.1%}" if c.high != float("inf") else (
        f"{c.n_current} vs {c.n_baseline} steps: too few to know the noise")
    if verdict == PASS:
        msg = f"mean step {c.ratio - 1:+.1%} vs baseline, within the +{budget:.0%} budget ({interval})"
        if c.high > 1.0 + budget:
            msg += "; the noise is wider than the budget: more steps would make this surer"
    elif verdict == FAIL:
        msg = (f"mean step {c.ratio - 1:+.1%} vs baseline, beyond the +{budget:.0%} budget, and the "
               f"slowdown is outside the noise ({interval})")
    else:
        msg = (f"mean step {c.ratio - 1:+.1%} vs baseline, beyond the +{budget:.0%} budget, but inside "
               f"the noise ({interval} includes no change): neither a pass nor a fail; measure more steps")
    return BudgetResult(name, verdict, measured, limit, msg)


def forbidden(current: Report, category: str) -> BudgetResult:
    """Present means: the primary verdict, or a finding of at least warning severity (an info-level
    note, a 6% input wait say, is not the bottleneck a CI gate forbids)."""
    name = f"no {category}"
    found = [f for f in current.findings if f.category == category
             and (category == current.primary or v.SEVERITY_RANK.get(f.severity, 0) >= 1)]
    if found:
        f = found[0]
        share = f", {f.share:.0%} of step time" if f.share is not None else ""
        what = "primary verdict" if category == current.primary else f.severity
        return BudgetResult(name, FAIL, f"{what}{share}", "absent", f"{category}: {f.summary}")
    if not _enough(current):
        return BudgetResult(name, INCONCLUSIVE, "-", "absent",
                            "too few steps measured to rule it out")
    return BudgetResult(name, PASS, "absent", "absent", f"no {category} finding")


def gpu_busy(current: Report, minimum: float) -> BudgetResult:
    name = "GPU busy"
    limit = f">= {minimum:.0%}"
    g = current.evidence.gpu
    if g is None or not g.uses_gpu or g.kernel_share is None:
        return BudgetResult(name, INCONCLUSIVE, "-", limit, "no GPU evidence in the current report")
    ok = g.kernel_share >= minimum
    return BudgetResult(name, PASS if ok else FAIL, f"{g.kernel_share:.1%}", limit,
                        f"GPU kernels busy {g.kernel_share:.1%} of step time")


def peak_memory(current: Report, maximum: int) -> BudgetResult:
    name = "peak memory"
    limit = f"<= {gib(maximum)}"
    ev = current.evidence
    peak, what = None, ""
    if ev.gpu is not None and ev.gpu.uses_gpu and ev.gpu.peak_reserved_bytes:
        peak, what = ev.gpu.peak_reserved_bytes, "GPU reserved"
    elif ev.memory is not None and ev.memory.peak_tree_bytes:
        peak, what = ev.memory.peak_tree_bytes, "host (run's PSS)"
    if peak is None:
        return BudgetResult(name, INCONCLUSIVE, "-", limit, "no memory measurement in the current report")
    ok = peak <= maximum
    return BudgetResult(name, PASS if ok else FAIL, f"{gib(peak)} {what}", limit,
                        f"{what} peaked at {gib(peak)}")


def check(current: Report, baseline: Report | None, cfg: GateConfig) -> list[BudgetResult]:
    results: list[BudgetResult] = []
    if cfg.max_regression is not None:
        results.append(step_time(current, baseline, cfg.max_regression))
    for cat in cfg.forbid:
        results.append(forbidden(current, cat))
    if cfg.min_gpu_busy is not None:
        results.append(gpu_busy(current, cfg.min_gpu_busy))
    if cfg.max_peak_memory is not None:
        results.append(peak_memory(current, cfg.max_peak_memory))
    return results


def overall(results: list[BudgetResult]) -> str:
    statuses = {r.status for r in results}
    if FAIL in statuses:
        return FAIL
    if INCONCLUSIVE in statuses:
        return INCONCLUSIVE
    return PASS

