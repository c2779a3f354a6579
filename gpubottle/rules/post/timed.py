"""What `--try-fixes` measured, folded into the verdict (pure): the fastest setting that was clearly
faster than the script as written becomes the first fix of the verdict's finding, with its measured
number, at the site and from the value of the fix that proposed the change; the other outcomes
become notes. `timed_words` says them."""

from __future__ import annotations

import dataclasses

from gpubottle.evidence import Evidence, Trial
from gpubottle.report import Finding, Fix
from gpubottle.rules.post import timed_words as words


def _proposed_by(findings: list[Finding], key: str) -> Fix | None:
    """The fix that proposed changing `key`: its current value and code site."""
    for f in findings:
        for fix in f.fixes:
            if key in fix.change:
                return fix
    return None


def measured_fix(findings: list[Finding], ev: Evidence) -> Fix | None:
    t = ev.trials
    if t is None or t.best is None or not t.trials:
        return None
    best = next((x for x in t.trials if x.change == t.best), None)
    base = t.trials[0]
    if best is None or best.speedup is None or best.mean_s is None or base.mean_s is None:
        return None
    origin = [_proposed_by(findings, k) for k in best.change]
    return Fix(
        where=next((o.where for o in origin if o is not None and o.where), None),
        text=words.measured_text(best),
        change={k: [o.change[k][0] if o is not None else None, v]
                for (k, v), o in zip(best.change.items(), origin)},
        expected=words.measured_expected(base, best),
        expected_step_s=words.promised_step_s(base, best),
    )


def trial_notes(ev: Evidence) -> list[str]:
    return words.trial_notes(ev.trials) if ev.trials is not None else []


def _clearly_faster(t: Trial) -> bool:
    lo = t.speedup_interval[0] if t.speedup_interval else None
    return t.failed is None and lo is not None and lo > 1.0


def without_timed_losers(findings: list[Finding], ev: Evidence) -> list[Finding]:
    """With `--try-fixes`, a change it timed is advised only where it measured clearly faster: one
    that measured slower or within the noise is said in the trials' table and notes, not offered as
    a "try" the run has already tried."""
    t = ev.trials
    if t is None or len(t.trials) < 2:
        return findings
    timed = [x for x in t.trials[1:] if x.failed is None]

    def keep(fix: Fix) -> bool:
        new = {k: v[-1] for k, v in fix.change.items()}
        trial = next((x for x in timed if new and x.change == new), None)
        return trial is None or _clearly_faster(trial)

    return [dataclasses.replace(f, fixes=[x for x in f.fixes if keep(x)]) for f in findings]
