"""Every sentence `--try-fixes` adds to a report, once each (the trials' decisions are tested in
test_trial_plan.py and, timed, in tests/check_fixes)."""

from __future__ import annotations

from gpubottle.evidence.trials import Trial, TrialsEvidence
from gpubottle.rules.post import timed_words as words

BASE = Trial(change={}, steps=60, rounds=2, mean_s=0.0325, speedup=1.0)


def _trial(**kw: object) -> Trial:
    t = Trial(change={"num_workers": 4}, steps=60, rounds=2, mean_s=0.0099, speedup=3.28,
              speedup_interval=[3.01, 3.55])
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def test_the_measured_fix_says_the_setting_its_interval_and_whether_the_prediction_held() -> None:
    best = _trial(predicted_speedup=3.0)
    assert words.measured_text(best) == (
        "measured on this machine: num_workers=4 made the step 3.28x faster (95% interval "
        "3.01x..3.55x, 60 steps in 2 runs); the prediction (3.0x) held")
    assert words.measured_text(_trial(predicted_speedup=6.0)).endswith("(6.0x) did not hold")
    assert "prediction" not in words.measured_text(_trial())  # a "try": it promised no number
    assert words.measured_expected(BASE, best) == (
        "mean step 32.5 ms -> 9.9 ms, 10.8 ms at the interval's slow end (measured)")


def test_the_promise_is_the_intervals_slow_end_not_the_short_runs_mean() -> None:
    """The trial's short runs time the early steps: num_workers=0 measured 2.28x there
    (1.74x..3.11x) and 1.50x over the whole applied run, so the promise is the slow end."""
    assert abs(words.promised_step_s(BASE, _trial()) - 0.0325 / 3.01) < 1e-9
    bare = _trial(speedup_interval=None)  # no interval: the mean is all there is
    assert words.promised_step_s(BASE, bare) == 0.0099
    assert words.measured_expected(BASE, bare) == "mean step 32.5 ms -> 9.9 ms (measured)"


def test_each_other_outcome_is_a_note_in_a_fixed_order() -> None:
    trials = TrialsEvidence(trials=[
        BASE,
        _trial(change={"num_workers": 2}, failed="exit status 1"),
        _trial(change={"num_workers": 8}, short=True),
        _trial(change={"num_workers": 30}, beyond=0.0043, mean_s=0.0017),
        _trial(change={"num_workers": 3}, unresolved=True, predicted_speedup=1.3,
               speedup_interval=[0.93, 1.30]),
    ], upper_bound=_trial(change={"input": "free"}, mean_s=0.0061, speedup=5.3,
                          speedup_interval=[5.0, 5.6]))
    assert words.trial_notes(trials) == [
        "--try-fixes: no setting timed was clearly faster than the script as written (every "
        "speed-up interval includes 1.0x)",
        "--try-fixes: num_workers=2 has no measurement: exit status 1",
        "--try-fixes: num_workers=8: the script ended after 30 measured steps a run, about one "
        "burst of its workers' batches: a rough pace (more steps per run, e.g. more epochs, would "
        "settle it); not the first fix",
        "--try-fixes: num_workers=30 measured a mean step of 1.7 ms, faster than its workers can "
        "make batches (about 4.3 ms a step): the steps ran from batches made ahead; not a number "
        "to trust (a longer trial would settle it)",
        "--try-fixes: num_workers=3 is still unresolved after 2 runs (interval 0.93x..1.30x): the "
        "prediction (1.3x) could not be told from noise here; time longer runs yourself",
        "--try-fixes: with input free (batches replayed from memory) the mean step is 6.1 ms, "
        "5.30x (5.00x..5.60x): no input fix can do better",
    ]
    trials.best = {"num_workers": 4}
    trials.trials = [BASE, _trial()]
    trials.upper_bound = None
    assert words.trial_notes(trials) == []  # the winner is the measured fix, not a note
