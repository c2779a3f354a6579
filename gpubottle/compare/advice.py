"""The advice of the first run held against the second: which of its fixes the change between the
runs applied (same setting, same site), and what each promised beside what was measured."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from gpubottle.compare.settings import LOADER, SCRIPT, Change
from gpubottle.report import Fix, Report
from gpubottle.serialisable import Serialisable

APPLIED, PARTLY, NOT_APPLIED, UNKNOWN = "applied", "partly", "not applied", "cannot tell"


@dataclass
class FixResult(Serialisable):
    """One fix of the first run's report, and what became of it in the second."""

    text: str
    where: str | None
    change: dict[str, list[Any]]
    applied: str  # applied | partly | not applied | cannot tell (a setting gpubottle does not record)
    predicted_run_s: float | None = None
    measured_run_s: float | None = None
    predicted_step_s: float | None = None
    measured_step_s: float | None = None
    held: float | None = None  # measured gain over predicted gain (run time where predicted, else step)
    values: dict[str, Any] = field(default_factory=dict)  # each setting's value in the second run
    loaders: list[str] = field(default_factory=list)  # the DataLoaders (sites) the fix is about
    options: list[str] = field(default_factory=list)  # command-line options or keys that set it
    together: int = 0  # other fixes applied in the same change: the measured gain is all of theirs


def _fixes(report: Report) -> list[Fix]:
    """Every fix that changes a setting, once (several findings may give the same one)."""
    seen: set[tuple[str | None, str]] = set()
    out = []
    for f in report.findings:
        for fix in f.fixes:
            if not fix.change:
                continue
            key = (fix.where, repr(sorted((k, repr(v)) for k, v in fix.change.items())))
            if key not in seen:
                seen.add(key)
                out.append(fix)
    return out


def loader_sites(report: Report, where: str | None) -> list[str]:
    """The DataLoaders (by site) a fix at `where` is about: the construction line itself, or where
    one of its settings' values comes from (an option's default, a variable, a config key)."""
    return [lo.site for lo in report.evidence.loaders if lo.site and where is not None and (
        lo.site == where or any(src.get("site") == where for src in lo.sources.values()))]


# A fix's DataLoader argument -> the setting the run records for it (whole batches indexed: the
# loader's sampler becomes a BatchSampler).
_RECORDED_AS = {"multiprocessing_context": "start_method", "batch_index": "sampler"}
# ...and the other recorded settings the same edit changes (batch_size=None: torch's default_convert
# in place of its collate), advised with it.
_ALSO = {"batch_index": ("batch_size", "collate_fn")}


def _matches(change: Change, setting: str, sites: list[str] | None) -> bool:
    """`sites`: the loaders the fix is about; None where it names none (any loader will do)."""
    if change.setting != _RECORDED_AS.get(setting, setting):
        return False
    if change.group != LOADER or not sites:
        return True  # thread counts and intervals: one per run
    return (change.was or change.where) in sites


def _options(fix: Fix) -> list[str]:
    """The script's options (or config keys given as overrides) through which the fix's settings
    are changed: a change of one of those on the command line is the fix applied there."""
    out = []
    for src in fix.source.values():
        if src.get("kind") == "option":
            out += [src["option"], *src.get("aliases", [])]
        elif src.get("kind") in ("config", "global") and (src.get("key") or src.get("override")):
            out.append(str(src.get("key") or src.get("override")))
    return out


def _recorded(fix_setting: str, changes: list[Change], recorded: set[str]) -> bool:
    name = _RECORDED_AS.get(fix_setting, fix_setting)
    return name in recorded or any(c.setting == name for c in changes)


def _gain(before: float | None, predicted: float | None, after: float | None) -> float | None:
    """Measured gain over predicted gain; None where no gain was promised or nothing measured."""
    if before is None or predicted is None or after is None or before - predicted <= 0:
        return None
    return round((before - after) / (before - predicted), 3)


def held_fixes(before: Report, changes: list[Change], recorded: set[str], run: tuple[float | None,
               float | None], step: tuple[float | None, float | None]) -> list[FixResult]:
    """`recorded`: the settings the runs record (a fix on anything else cannot be told applied);
    `run`, `step`: (before, after) wall time and mean step."""
    out = []
    for fix in _fixes(before):
        sites = loader_sites(before, fix.where)
        matched: dict[str, Change] = {}
        for name in fix.change:
            c = next((c for c in changes if _matches(c, name, sites)), None)
            if c is not None:
                matched[name] = c
        if matched:
            applied = APPLIED if len(matched) == len(fix.change) else PARTLY
        elif all(_recorded(name, changes, recorded) for name in fix.change):
            applied = NOT_APPLIED
        else:
            applied = UNKNOWN
        r = FixResult(fix.text, fix.where, dict(fix.change), applied,
                      predicted_run_s=fix.expected_run_s, predicted_step_s=fix.expected_step_s,
                      values={k: c.after for k, c in matched.items()}, loaders=sites,
                      options=_options(fix))
        if applied in (APPLIED, PARTLY):
            r.measured_run_s, r.measured_step_s = run[1], step[1]
            r.held = _gain(run[0], r.predicted_run_s, run[1])
            if r.held is None:
                r.held = _gain(step[0], r.predicted_step_s, step[1])
        out.append(r)
    done = [r for r in out if r.applied in (APPLIED, PARTLY)]
    for r in done:
        r.together = len(done) - 1
    return out


def advised(change: Change, fixes: list[FixResult]) -> bool:
    """Whether a change between the runs is one the first report advised."""
    if change.group == SCRIPT:
        return any(change.setting in f.options for f in fixes)
    return any(_matches(change, name, f.loaders) or (
        change.setting in _ALSO.get(name, ()) and f.applied in (APPLIED, PARTLY)
        and _matches(dataclasses.replace(change, setting=_RECORDED_AS[name]), name, f.loaders))
        for f in fixes for name in f.change)
