"""What `--try-fixes` measured, folded into the verdict (pure): the fastest setting that was clearly
faster than the script as written becomes the first fix of the verdict's finding, with its measured
number, at the site and from the value of the fix that proposed the change; the other outcomes
become notes. `timed_words` says them."""

from __future__ import annotations

from gpubottle.evidence import Evidence
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
        expected_step_s=best.mean_s,
    )


def trial_notes(ev: Evidence) -> list[str]:
    return words.trial_notes(ev.trials) if ev.trials is not None else []
