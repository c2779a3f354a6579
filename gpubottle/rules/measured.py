"""What `--try-fixes` measured, folded into the verdict (pure): the fastest setting that was clearly
faster than the script as written becomes the first fix of the verdict's finding, with its measured
number; the other outcomes (nothing clearly faster, the upper bound with input free) become notes."""

from __future__ import annotations

from gpubottle.evidence import Evidence
from gpubottle.evidence.trials import Trial
from gpubottle.evidence.trials import setting_label as _label
from gpubottle.report import Finding, Fix
from gpubottle.units import ms


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
    lo, hi = best.speedup_interval or [best.speedup, best.speedup]
    held = ""
    if best.held is not None:
        held = (f"; the prediction ({best.predicted_speedup:.1f}x) "
                + ("held" if best.held else "did not hold"))
    origin = [_proposed_by(findings, k) for k in best.change]
    return Fix(
        where=next((o.where for o in origin if o is not None and o.where), None),
        text=f"measured on this machine: {_label(best.change)} made the step {best.speedup:.2f}x "
             f"faster (95% interval {lo:.2f}x..{hi:.2f}x, {best.steps} steps in {best.rounds} runs)"
             + held,
        change={k: [o.change[k][0] if o is not None else None, v]
                for (k, v), o in zip(best.change.items(), origin)},
        expected=f"mean step {ms(base.mean_s)} -> {ms(best.mean_s)} (measured)",
        expected_step_s=best.mean_s,
    )


def trial_notes(ev: Evidence) -> list[str]:
    t = ev.trials
    if t is None:
        return []
    out = []
    tried = [x for x in t.trials[1:] if x.failed is None]
    if t.best is None and tried:
        out.append("--try-fixes: no setting timed was clearly faster than the script as written "
                   "(every speed-up interval includes 1.0x)")
    out += [f"--try-fixes: {_label(x.change)} has no measurement: {x.failed}"
            for x in t.trials if x.failed]
    out += [f"--try-fixes: {_label(x.change)}: the script ended after {x.steps // max(1, x.rounds)} "
            "measured steps a run, about one burst of its workers' batches: a rough pace (more "
            "steps per run, e.g. more epochs, would settle it); not the first fix"
            for x in t.trials if x.short]
    out += [f"--try-fixes: {_label(x.change)} measured a mean step of {ms(x.mean_s or 0.0)}, faster than "
            f"its workers can make batches (about {ms(x.beyond)} a step): the steps ran from batches "
            "made ahead; not a number to trust (a longer trial would settle it)"
            for x in t.trials if x.beyond is not None]
    out += [f"--try-fixes: {_label(x.change)} is still unresolved after {x.rounds} runs (interval "
            f"{(x.speedup_interval or [0, 0])[0]:.2f}x..{(x.speedup_interval or [0, 0])[1]:.2f}x): the "
            f"prediction ({x.predicted_speedup:.1f}x) could not be told from noise here; time longer "
            "runs yourself" for x in t.trials if x.unresolved and x.predicted_speedup]
    ub: Trial | None = t.upper_bound
    if ub is not None and ub.speedup is not None and ub.mean_s is not None:
        lo, hi = ub.speedup_interval or [ub.speedup, ub.speedup]
        out.append(f"--try-fixes: with input free (batches replayed from memory) the mean step is "
                   f"{ms(ub.mean_s)}, {ub.speedup:.2f}x ({lo:.2f}x..{hi:.2f}x): no input fix can "
                   "do better")
    return out
