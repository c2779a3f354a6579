"""Which settings `--try-fixes` times, from the report's fixes (pure).

A fix qualifies when every value it changes can be set from outside the code (probes/trial.py):
DataLoader num_workers, persistent_workers, prefetch_factor, pin_memory, whole batches indexed at
once, torch's thread count, and a fused optimizer step.
For a count, the proposed value and its neighbours are tried (half and double, within bounds), since
the best value is what the measurement says, not what the model predicted. The upper bound (input
replayed from memory) is timed whenever the run has a DataLoader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpubottle.probes.trial import (
    BATCH_INDEX_KEY,
    FUSED_KEY,
    LOADER_KEYS,
    REPLAY_BATCHES,
    REPLAY_KEY,
    THREADS_KEY,
)
from gpubottle.report import Fix, Report
from gpubottle.rules.common import batches_per_step

SETTABLE = (*LOADER_KEYS, THREADS_KEY, FUSED_KEY, BATCH_INDEX_KEY)
COUNTS = ("num_workers", "prefetch_factor", THREADS_KEY)
MAX_WORKERS = 32
MAX_CANDIDATES = 6
BURST_SPANS = 4  # measured steps per batch the workers hold ready


@dataclass
class Candidate:
    change: dict[str, Any]
    predicted_speedup: float | None = None
    fix: Fix | None = None
    floor_s: float | None = None  # the fastest step its workers could make batches for


@dataclass
class TrialPlan:
    candidates: list[Candidate] = field(default_factory=list)
    upper_bound: bool = False
    skipped: list[str] = field(default_factory=list)  # fixes that need an edit of the code
    workers: int = 0  # the script's main DataLoader as written
    prefetch: int | None = None

    def buffered(self, change: dict[str, Any]) -> int:
        """Batches the workers have ready before the loop takes the first: steps that run from
        that buffer say nothing of the loader's pace, so a trial leaves them out (with 32 workers,
        64 batches: a 40-step trial measured only the buffer, 0.9 ms steps against 6 ms steady)."""
        if change.get(REPLAY_KEY):
            return REPLAY_BATCHES  # fetched from the loader as written, before the replay starts
        nw = int(change.get("num_workers", self.workers) or 0)
        pf = change.get("prefetch_factor", self.prefetch)
        return nw * int(pf or 2) if nw > 0 else 0

    def steps_for(self, change: dict[str, Any], trial_steps: int) -> int:
        """Steps to run: the buffer, then enough to span several rounds of the workers (with in-order
        delivery, n workers hand over batches in bursts of about n: a span of one burst measured
        3.6 ms where 7.4 ms was the pace)."""
        buffer = self.buffered(change)
        if change.get(REPLAY_KEY):
            return buffer + trial_steps
        return buffer + max(trial_steps, BURST_SPANS * buffer)

    @property
    def settings(self) -> list[dict[str, Any]]:
        """Every setting to time: the baseline first, then candidates, then the upper bound."""
        out: list[dict[str, Any]] = [{}] + [c.change for c in self.candidates]
        return out + ([{REPLAY_KEY: True}] if self.upper_bound else [])


def _predicted(report: Report, fix: Fix) -> float | None:
    base = report.step_summary.mean_s
    if fix.expected_step_s and base:
        return round(base / fix.expected_step_s, 3)
    return None


def _neighbours(key: str, current: Any, proposed: int, cores: int) -> list[int]:
    top = MAX_WORKERS if key == "num_workers" else max(1, 2 * cores) if key == THREADS_KEY else 16
    low = 0 if key == "num_workers" else 1
    values = {proposed, max(low, proposed // 2), min(top, proposed * 2)}
    if key == THREADS_KEY:
        values = {v for v in values if v <= max(1, cores)} | {proposed}
    return sorted(v for v in values if v != current and v >= low)


def production_floor(report: Report, workers: int) -> float | None:
    """The fastest mean step `workers` workers can make batches for, at the pace one batch took to
    make in the diagnosis (the main thread's wait with num_workers=0; a worker's share of the step
    otherwise): 30 workers cannot deliver a 146 ms batch faster than every ~5 ms."""
    ev = report.evidence
    m = ev.measured()
    lo = max(ev.loaders, key=lambda x: x.batches, default=None)
    if m is None or lo is None or not lo.batches or workers < 1 or lo.num_workers is None:
        return None
    per_step = batches_per_step(ev, lo)
    nw = lo.num_workers
    t_batch = m.mean_wait_s / per_step if nw == 0 else nw * m.mean_step_s / per_step
    return per_step * t_batch / workers


def plan_trials(report: Report) -> TrialPlan:
    out = TrialPlan(upper_bound=bool(report.evidence.loaders))
    unsplit = False
    if report.evidence.loaders:
        main = max(report.evidence.loaders, key=lambda lo: lo.batches or 0)
        out.workers, out.prefetch = int(main.num_workers or 0), main.prefetch_factor
        # An IterableDataset that does not split its stream: more workers read it more times, and
        # the steps get faster only because an epoch holds more of them. Not a setting to time.
        unsplit = bool(main.iterable and not main.shards)
    cores = int(report.evidence.cpu.cores_available or 1) if report.evidence.cpu else 1
    seen: list[dict[str, Any]] = []
    for finding in report.findings:
        for fix in finding.fixes:
            if not fix.change:
                continue
            if any(k not in SETTABLE for k in fix.change) or (unsplit and "num_workers" in fix.change):
                out.skipped.append(", ".join(f"{k}={v[-1]}" for k, v in fix.change.items()))
                continue
            count = [k for k in fix.change if k in COUNTS]
            variants: list[dict[str, Any]] = [{k: v[-1] for k, v in fix.change.items()}]
            if len(count) == 1 and len(fix.change) == 1:
                key = count[0]
                current, proposed = fix.change[key][0], int(fix.change[key][-1])
                variants = [{key: n} for n in _neighbours(key, current, proposed, cores)]
            for change in variants:
                if change in seen:
                    continue
                seen.append(change)
                proposed_here = all(fix.change[k][-1] == v for k, v in change.items())
                out.candidates.append(Candidate(
                    change, _predicted(report, fix) if proposed_here else None, fix,
                    production_floor(report, int(change["num_workers"]))
                    if "num_workers" in change else None))
    out.candidates = out.candidates[:MAX_CANDIDATES]
    return out
