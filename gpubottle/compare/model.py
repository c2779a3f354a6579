"""Two runs side by side: wall time, the account's phases, the step, the verdicts, what changed and
the first run's advice held against the second (the `gpubottle.compare/1` contract)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from gpubottle.compare.advice import FixResult, advised, held_fixes
from gpubottle.compare.settings import (
    LOADER_FIELDS,
    MACHINE,
    SCRIPT,
    Change,
    changes,
    rhythm_settings,
    thread_settings,
)
from gpubottle.evidence.account import PHASES
from gpubottle.gate.stats import compare as compare_steps
from gpubottle.report import Report
from gpubottle.serialisable import Serialisable

SCHEMA = "gpubottle.compare/1"


@dataclass
class Side(Serialisable):
    dir: str | None
    wall_s: float | None
    primary: str
    lead: str
    lead_summary: str | None = None
    script: str | None = None
    started_at: str | None = None


@dataclass
class Speed(Serialisable):
    """before and after (seconds), speed-up (before / after: above 1 is faster) and its 95%
    interval where the steps allow one; `why` says why there is none."""

    before_s: float | None
    after_s: float | None
    speedup: float | None
    interval: list[float] | None = None
    why: str | None = None


@dataclass
class PhaseRow(Serialisable):
    phase: str
    before_s: float | None
    after_s: float | None


@dataclass
class ChangeRow(Serialisable):
    setting: str
    before: Any
    after: Any
    where: str | None
    group: str = ""
    advised: bool = False
    was: str | None = None  # a DataLoader's site in the first run, where the edit moved its line


@dataclass
class Comparison(Serialisable):
    before: Side
    after: Side
    run: Speed
    step: Speed
    phases: list[PhaseRow] = field(default_factory=list)
    changes: list[ChangeRow] = field(default_factory=list)
    fixes: list[FixResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said first: different machines, scripts, the same run

    def to_contract(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **self.to_json()}


def _side(report: Report, path: str) -> Side:
    run = report.evidence.run
    lead = report.lead
    return Side(dir=run.run_dir or path, wall_s=run.duration_s, primary=report.primary,
                lead=lead.category if lead is not None else report.primary,
                lead_summary=lead.summary if lead is not None else None,
                script=os.path.basename(run.target) if run.target else None, started_at=run.started_at)


def _run_speed(b: float | None, a: float | None) -> Speed:
    speedup = round(b / a, 3) if b and a else None
    return Speed(b, a, speedup, None, "one run each: no interval" if speedup else "not measured")


def _step_speed(before: Report, after: Report) -> Speed:
    b, a = before.evidence.measured_durations(), after.evidence.measured_durations()
    mb, ma = before.step_summary.mean_s, after.step_summary.mean_s
    if not b or not a or not mb or not ma:
        return Speed(mb, ma, None, None, "no steps measured on one side")
    c = compare_steps(a, b)  # after / before, with its bootstrap interval
    speedup = round(mb / ma, 3)
    if c.low <= 0 or c.high == float("inf"):
        return Speed(mb, ma, speedup, None, f"too few steps for an interval ({len(b)} and {len(a)})")
    return Speed(mb, ma, speedup, [round(1 / c.high, 3), round(1 / c.low, 3)])


def _phases(before: Report, after: Report) -> list[PhaseRow]:
    def sums(r: Report) -> dict[str, float] | None:
        if not r.evidence.account:
            return None
        out: dict[str, float] = {}
        for e in r.evidence.account:
            out[e.phase] = out.get(e.phase, 0.0) + e.seconds
        return out

    sb, sa = sums(before), sums(after)
    rows = []
    for phase in PHASES:
        if (sb is None or phase not in sb) and (sa is None or phase not in sa):
            continue
        # A phase one run's account lacks took no time there; with no account at all, unmeasured.
        rows.append(PhaseRow(phase, round(sb.get(phase, 0.0), 3) if sb is not None else None,
                             round(sa.get(phase, 0.0), 3) if sa is not None else None))
    return rows


def _recorded(before: Report, after: Report) -> set[str]:
    names = set(LOADER_FIELDS) if before.evidence.loaders or after.evidence.loaders else set()
    for r in (before, after):
        names |= {s.name for s in thread_settings(r) + rhythm_settings(r)}
    return names


def _same_run(before: Report, after: Report, paths: tuple[str, str]) -> bool:
    if os.path.realpath(paths[0]) == os.path.realpath(paths[1]):
        return True
    rb, ra = before.evidence.run, after.evidence.run
    return bool(rb.started_at and rb.started_at == ra.started_at and rb.duration_s == ra.duration_s
                and rb.command == ra.command)


def _notes(before: Report, after: Report, diff: list[Change], same: bool) -> list[str]:
    notes = []
    if same:
        notes.append("both sides are the same run: nothing changed, and there is nothing to measure")
    scripts = [c for c in diff if c.group == SCRIPT and c.setting in ("script", "trace")]
    if scripts:
        notes.append(f"these are different programs ({scripts[0].before} and {scripts[0].after}): "
                     "their times are compared, not a change to one program, and the first one's "
                     "advice is not held against the second")
    machine = [c for c in diff if c.group == MACHINE]
    if machine:
        said = ", ".join(f"{c.setting} {c.before} -> {c.after}" for c in machine)
        notes.append(f"the runs differ in machine or torch ({said}): that alone may change every number")
    for r, word in ((before, "before"), (after, "after")):
        if r.evidence.run.kind == "run" and r.evidence.run.stop_reason not in (None, "completed"):
            notes.append(f"the {word} run did not run to its end ({r.evidence.run.stop_reason}): "
                         "its wall time is not the whole program's")
    return notes


def compare_reports(before: Report, after: Report, paths: tuple[str, str]) -> Comparison:
    diff = changes(before, after)
    same = _same_run(before, after, paths)
    run = _run_speed(before.evidence.run.duration_s, after.evidence.run.duration_s)
    step = _step_speed(before, after)
    if same:
        run.interval = step.interval = None
        run.why = step.why = "the same run"
    other_program = any(c.group == SCRIPT and c.setting in ("script", "trace") for c in diff)
    # Another program's time says nothing of whether this one's advice worked.
    fixes = [] if same or other_program else held_fixes(
        before, diff, _recorded(before, after), (run.before_s, run.after_s), (step.before_s, step.after_s))
    rows = [ChangeRow(c.setting, c.before, c.after, c.where, c.group, advised(c, fixes), c.was) for c in diff]
    return Comparison(before=_side(before, paths[0]), after=_side(after, paths[1]), run=run, step=step,
                      phases=_phases(before, after), changes=rows, fixes=fixes,
                      notes=_notes(before, after, diff, same))
