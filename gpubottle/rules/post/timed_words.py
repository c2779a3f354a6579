"""What `--try-fixes` measured, said: the measured fix's sentence and expectation, and a note for
each other outcome of the trials (nothing clearly faster, no measurement, a short or too-fast
trial, still unresolved, the upper bound with input free)."""

from __future__ import annotations

from gpubottle.evidence.trials import Trial, TrialsEvidence
from gpubottle.evidence.trials import setting_label as _label
from gpubottle.units import ms


def _interval(x: Trial) -> tuple[float, float]:
    lo, hi = x.speedup_interval or [x.speedup or 0.0, x.speedup or 0.0]
    return lo, hi


def measured_text(best: Trial) -> str:
    lo, hi = _interval(best)
    held = ""
    if best.held is not None:
        held = (f"; the prediction ({best.predicted_speedup:.1f}x) "
                + ("held" if best.held else "did not hold"))
    return (f"measured on this machine: {_label(best.change)} made the step {best.speedup:.2f}x "
            f"faster (95% interval {lo:.2f}x..{hi:.2f}x, {best.steps} steps in {best.rounds} runs)"
            + held)


def promised_step_s(base: Trial, best: Trial) -> float | None:
    """The step the measured fix promises: the base's mean over the interval's slow end. The
    trial's short runs time the run's early steps; the whole run, where its pace drifts, gained
    less (num_workers=0 on in-memory batches: 2.28x in the trial, interval 1.74x..3.11x, 1.50x
    over the whole applied run), so the promise is what the interval vouches for."""
    lo = best.speedup_interval[0] if best.speedup_interval else 0.0
    return base.mean_s / lo if base.mean_s and lo > 1.0 else best.mean_s


def measured_expected(base: Trial, best: Trial) -> str:
    text = f"mean step {ms(base.mean_s or 0.0)} -> {ms(best.mean_s or 0.0)}"
    promised = promised_step_s(base, best)
    if promised is not None and best.mean_s is not None and promised > best.mean_s:
        text += f", {ms(promised)} at the interval's slow end"
    return text + " (measured)"


def no_winner_note() -> str:
    return ("--try-fixes: no setting timed was clearly faster than the script as written "
            "(every speed-up interval includes 1.0x)")


def failed_note(x: Trial) -> str:
    return f"--try-fixes: {_label(x.change)} has no measurement: {x.failed}"


def short_note(x: Trial) -> str:
    return (f"--try-fixes: {_label(x.change)}: the script ended after {x.steps // max(1, x.rounds)} "
            "measured steps a run, about one burst of its workers' batches: a rough pace (more "
            "steps per run, e.g. more epochs, would settle it); not the first fix")


def beyond_note(x: Trial) -> str:
    return (f"--try-fixes: {_label(x.change)} measured a mean step of {ms(x.mean_s or 0.0)}, faster "
            f"than its workers can make batches (about {ms(x.beyond or 0.0)} a step): the steps ran "
            "from batches made ahead; not a number to trust (a longer trial would settle it)")


def unresolved_note(x: Trial) -> str:
    lo, hi = x.speedup_interval or [0.0, 0.0]
    return (f"--try-fixes: {_label(x.change)} is still unresolved after {x.rounds} runs (interval "
            f"{lo:.2f}x..{hi:.2f}x): the prediction ({x.predicted_speedup or 0.0:.1f}x) could not "
            "be told from noise here; time longer runs yourself")


def upper_bound_note(ub: Trial) -> str:
    lo, hi = _interval(ub)
    return (f"--try-fixes: with input free (batches replayed from memory) the mean step is "
            f"{ms(ub.mean_s or 0.0)}, {ub.speedup or 0.0:.2f}x ({lo:.2f}x..{hi:.2f}x): no input fix "
            "can do better")


def trial_notes(t: TrialsEvidence) -> list[str]:
    """A note per trial outcome that is not the measured fix, in a fixed order."""
    tried = [x for x in t.trials[1:] if x.failed is None]
    out = [no_winner_note()] if t.best is None and tried else []
    out += [failed_note(x) for x in t.trials if x.failed]
    out += [short_note(x) for x in t.trials if x.short]
    out += [beyond_note(x) for x in t.trials if x.beyond is not None]
    out += [unresolved_note(x) for x in t.trials if x.unresolved and x.predicted_speedup]
    ub = t.upper_bound
    if ub is not None and ub.speedup is not None and ub.mean_s is not None:
        out.append(upper_bound_note(ub))
    return out
