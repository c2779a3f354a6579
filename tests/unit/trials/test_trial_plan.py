"""--try-fixes in-process: the trial plan, the loader settings a trial replaces, the replayed input,
the intervals and what leads the fixes, the table in 80 columns."""

from __future__ import annotations

import io

import pytest
from factories import evidence
from rich.console import Console

from gpubottle.evidence.trials import Trial, TrialsEvidence
from gpubottle.probes.trial import REPLAY_BATCHES, Replay, loader_kwargs
from gpubottle.render.trials import render_trials
from gpubottle.report import Finding, Fix, Report
from gpubottle.rules import diagnose
from gpubottle.stats import mean_ratio_interval as speedup_interval
from gpubottle.stats import median_interval
from gpubottle.trials.plan import plan_trials
from gpubottle.trials.runner import _summarise


def _report(fixes: list[Fix], cores: float = 4.0, loader: bool = True) -> Report:
    ev = evidence(step_s=0.1, cores=cores, loader=loader)
    return Report(primary="data-starved", evidence=ev,
                  findings=[Finding("data-starved", "warning", 0.5, "waits", fixes=fixes)])


def test_plan_takes_settable_fixes_with_neighbours_and_skips_code_edits():
    fixes = [Fix("more workers", change={"num_workers": [0, 4]}, expected_step_s=0.025),
             Fix("threads", change={"torch.set_num_threads": [8, 4]}),
             Fix("smaller batch", change={"batch_size": [64, 32]}),
             Fix("keep workers", change={"persistent_workers": [False, True]})]
    plan = plan_trials(_report(fixes))
    changes = [c.change for c in plan.candidates]
    assert changes[:3] == [{"num_workers": 2}, {"num_workers": 4}, {"num_workers": 8}]
    assert {"torch.set_num_threads": 2} in changes and {"torch.set_num_threads": 4} in changes
    assert {"torch.set_num_threads": 8} not in changes  # the current value, and above the cores
    assert {"persistent_workers": True} in changes
    assert plan.skipped == ["batch_size=32"]
    assert plan.upper_bound
    assert plan.settings[0] == {} and plan.settings[-1] == {"replay": True}
    # Only the proposed value carries the fix's prediction: 0.1 s -> 0.025 s.
    assert [c.predicted_speedup for c in plan.candidates[:3]] == [None, 4.0, None]


def test_whole_batches_indexed_are_timed_as_proposed_with_no_neighbours():
    """A TensorDataset's batch_index fix with num_workers=0 (rules/input/fixes.batch_index_fix):
    one setting, both keys together, no worker counts around it."""
    fixes = [Fix("index whole batches", change={"batch_index": [False, True], "num_workers": [2, 0]})]
    plan = plan_trials(_report(fixes))
    assert [c.change for c in plan.candidates] == [{"batch_index": True, "num_workers": 0}]
    assert not plan.skipped and plan.upper_bound


def test_a_fused_optimizer_is_a_setting_to_time_and_foreach_an_edit():
    fixes = [Fix("fuse the optimizer", change={"fused": [None, True]}),
             Fix("foreach", change={"foreach": [False, True]})]
    plan = plan_trials(_report(fixes, loader=False))
    assert [c.change for c in plan.candidates] == [{"fused": True}]
    assert plan.skipped == ["foreach=True"] and plan.settings == [{}, {"fused": True}]


def test_no_dataloader_no_upper_bound():
    assert plan_trials(_report([], loader=False)).settings == [{}]


def test_loader_kwargs_replace_the_scripts_values():
    from torch.utils.data import DataLoader

    init = DataLoader.__init__
    args, kwargs = loader_kwargs(init, ([1, 2, 3], 2, False), {"num_workers": 0},
                                 {"num_workers": 3, "pin_memory": True})
    assert args == () and kwargs["num_workers"] == 3 and kwargs["pin_memory"] is True
    assert kwargs["batch_size"] == 2 and kwargs["dataset"] == [1, 2, 3]
    # Positional num_workers (the 6th argument) too; without workers, the worker-only settings go.
    _, kwargs = loader_kwargs(init, ([1], 1, False, None, None, 4),
                              {"persistent_workers": True, "prefetch_factor": 4}, {"num_workers": 0})
    assert kwargs["num_workers"] == 0 and "persistent_workers" not in kwargs
    assert "prefetch_factor" not in kwargs
    DataLoader(**kwargs)  # accepted by the real class


def test_replay_keeps_the_first_batches_and_never_ends():
    source = iter(range(100))
    r = Replay()
    got = [r.next(lambda: next(source)) for _ in range(REPLAY_BATCHES + 6)]
    assert got[:REPLAY_BATCHES] == list(range(REPLAY_BATCHES))
    assert got[REPLAY_BATCHES:] == [0, 1, 2, 3, 0, 1]
    short = iter([7])
    r = Replay()
    assert [r.next(lambda: next(short)) for _ in range(3)] == [7, 7, 7]  # an epoch of one batch


def test_intervals_separate_clear_differences_and_not_noise():
    base = [[0.100, 0.102, 0.098, 0.101] * 5, [0.099, 0.103, 0.100, 0.101] * 5]
    fast = [[0.050, 0.051, 0.049, 0.052] * 5, [0.050, 0.049, 0.051, 0.050] * 5]
    med, lo, hi = median_interval(base)
    assert lo <= med <= hi and hi - lo < 0.005
    s, slo, shi = speedup_interval(base, fast)
    assert 1.9 < slo <= s <= shi < 2.1
    same = [[0.100, 0.104, 0.096, 0.101] * 5, [0.097, 0.103, 0.100, 0.102] * 5]
    s, slo, shi = speedup_interval(base, same)
    assert slo < 1.0 < shi  # inconclusive, and reported so


def _trials() -> TrialsEvidence:
    plan = plan_trials(_report([Fix("w", change={"num_workers": [0, 4]}, expected_step_s=0.03)]))
    rounds = [[[0.1] * 20, [0.1] * 20], [[0.06] * 20, [0.061] * 20], [[0.03] * 20, [0.031] * 20],
              [[0.031] * 20, [0.03] * 20], [[0.025] * 20, [0.025] * 20]]
    return _summarise(plan, plan.settings, rounds, {})


def test_the_fastest_clear_setting_leads_the_verdicts_fixes():
    t = _trials()
    assert t.trials[0].change == {} and t.trials[0].speedup == 1.0
    assert t.best == {"num_workers": 4}
    assert t.upper_bound is not None and t.upper_bound.speedup == pytest.approx(4.0)
    ev = evidence(step_s=0.1, wait_s=0.07, cores=4.0, per_worker=None)
    ev.trials = t
    rep = diagnose(ev)
    first = rep.findings[0].fixes[0]
    assert first.text.startswith("measured on this machine: num_workers=4 made the step 3.28x")
    assert first.change == {"num_workers": [0, 4]} and "(measured)" in (first.expected or "")
    assert first.where == "train.py:42"  # the DataLoader the fix that proposed it names
    assert any("input free" in n for n in rep.notes)
    data = rep.to_contract()
    assert data["trials"][0]["change"] == {} and data["upper_bound"]["change"] == {"replay": True}
    assert data["trials"][2]["predicted_speedup"] == pytest.approx(3.333, abs=0.01)


def test_table_fits_80_columns():
    buf = io.StringIO()
    render_trials(Console(file=buf, width=80, highlight=False), _trials())
    lines = buf.getvalue().splitlines()
    assert "num_workers=4" in buf.getvalue() and "held" in buf.getvalue()
    assert max(len(x) for x in lines) <= 80


def test_nothing_clearly_faster_is_said(monkeypatch: pytest.MonkeyPatch):
    ev = evidence(step_s=0.1, wait_s=0.07, cores=4.0)
    ev.trials = TrialsEvidence(trials=[Trial(change={}, median_s=0.1, speedup=1.0),
                                       Trial(change={"num_workers": 2}, median_s=0.1, speedup=1.0,
                                             speedup_interval=[0.95, 1.05])])
    rep = diagnose(ev)
    assert any("no setting timed was clearly faster" in n for n in rep.notes)
    assert not rep.findings[0].fixes or not rep.findings[0].fixes[0].text.startswith("measured")


def test_a_run_too_short_for_the_workers_pace_is_flagged():
    ev = evidence(step_s=0.1, wait_s=0.07, cores=4.0)
    ev.trials = TrialsEvidence(trials=[
        Trial(change={}, mean_s=0.1, speedup=1.0),
        Trial(change={"num_workers": 18}, mean_s=0.01, speedup=10.0, speedup_interval=[8.0, 12.0],
              steps=40, rounds=2, short=True)], best={"num_workers": 18})
    notes = diagnose(ev).notes
    assert any("num_workers=18: the script ended after 20 measured steps" in n for n in notes)


def test_a_short_trial_or_one_faster_than_its_workers_can_be_never_leads():
    """Its number is not one to trust: the first fix is the best trustworthy setting, the other is
    a note saying why."""
    from gpubottle.trials.runner import _unresolved

    plan = plan_trials(_report([Fix("w", change={"num_workers": [0, 4]}, expected_step_s=0.03)]))
    fast = {"num_workers": 8}
    for c in plan.candidates:
        c.floor_s = 0.02 if c.change == fast else None  # 8 workers cannot beat 20 ms a step
    i = plan.settings.index(fast)
    rounds = [[[0.1] * 20, [0.1] * 20]] + [[[0.05] * 20, [0.051] * 20] for _ in plan.settings[1:]]
    rounds[i] = [[0.004] * 20, [0.0041] * 20]  # the workers' buffer, not their pace
    t = _summarise(plan, plan.settings, rounds, {}, {plan.settings.index({"num_workers": 2})})
    assert t.best == {"num_workers": 4}
    assert next(x for x in t.trials if x.change == fast).beyond == pytest.approx(0.02)
    ev = evidence(step_s=0.1, wait_s=0.07, cores=4.0, per_worker=None)
    ev.trials = t
    notes = diagnose(ev).notes
    assert any("faster than its workers can make batches" in n for n in notes)
    assert any("num_workers=2" in n and "not the first fix" in n for n in notes)
    # Within the noise and predicted to gain: more rounds are due.
    noisy = [[[0.1, 0.2] * 10], [[0.09, 0.21] * 10]] + [[[0.1] * 20] for _ in plan.settings[2:]]
    proposed = plan.settings.index({"num_workers": 4})
    noisy[proposed] = [[0.12, 0.18] * 10]
    assert proposed in _unresolved(plan, plan.settings, noisy, {})

