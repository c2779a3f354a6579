"""`gpubottle compare` on reports built from factory evidence: which settings changed (DataLoaders
paired by site, also where an edit moved the line), which of the first report's fixes the change
applied and what each promised beside what was measured, the notes said first, the JSON contract
and the 80-column screen."""

from __future__ import annotations

import io

from factories import evidence

from gpubottle.compare.advice import APPLIED, NOT_APPLIED, UNKNOWN
from gpubottle.compare.model import SCHEMA, compare_reports
from gpubottle.compare.settings import parse_args
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import AccountEntry
from gpubottle.render.compare import render_compare, render_compare_html
from gpubottle.report import Finding, Fix, Report
from gpubottle.rules import diagnose


def _run(ev: Evidence, *args: str, torch: str = "2.13.0") -> Evidence:
    """Two seconds of start-up, then the steps: the account the rules predict the run time from."""
    train = round(sum(ev.steps.durations_s), 6)
    wall = ev.run.duration_s = 2.0 + train
    ev.run.target = "train.py"
    ev.run.command = ["gpubottle", "run", "--out", "x", "train.py", *args]
    ev.run.torch_version = torch
    ev.run.started_at = f"2026-11-26T12:00:{int(wall):02d}"
    ev.account = [AccountEntry("startup", 2.0, 2.0 / wall), AccountEntry("train", train, train / wall)]
    return ev


def _starved(step_s: float = 0.1) -> Report:
    """50 steps of 100 ms, 60 of them waiting for data: 7 s in all."""
    return diagnose(_run(evidence(step_s=step_s, wait_s=0.06, wait_cpu_s=0.06, cores=8)))


def _fed(workers: int = 2, site: str = "train.py:42", step_s: float = 0.045, torch: str = "2.13.0") -> Report:
    ev = _run(evidence(step_s=step_s, num_workers=workers, per_worker=0.5, cores=8), torch=torch)
    ev.loaders[0].site = site
    return diagnose(ev)


def test_script_arguments_are_read_as_options_overrides_and_positionals():
    got = parse_args(["data/", "--lr", "0.1", "--workers=4", "--amp", "--shift", "-3",
                      "trainer.max_epochs=2"])
    assert got == {"argument 1": "data/", "--lr": "0.1", "--workers": "4", "--amp": True,
                   "--shift": "-3", "trainer.max_epochs": "2"}


def test_the_advised_worker_change_is_held_against_the_measured_step():
    before, after = _starved(), _fed(workers=2)
    c = compare_reports(before, after, ("a", "b"))
    fix = next(f for f in c.fixes if "num_workers" in f.change)
    assert fix.applied == APPLIED and fix.values == {"num_workers": 2}
    # Predicted: 40 ms steps, 60 ms less in each of the 48 measured steps: the run 7.0 -> 4.12 s;
    # measured 4.25 s: 2.75 of the 2.88 s promised.
    assert fix.predicted_step_s == 0.04 and fix.predicted_run_s == 4.12
    assert round(fix.measured_step_s, 6) == 0.045 and fix.measured_run_s == 4.25 and fix.held == 0.955
    [ch] = [x for x in c.changes if x.group == "loader"]
    # prefetch_factor appears with the workers: it is not listed as a change of its own.
    assert (ch.setting, ch.before, ch.after, ch.where, ch.advised) == ("num_workers", 0, 2, "train.py:42",
                                                                       True)
    assert c.run.speedup == round(7 / 4.25, 3) and c.run.interval is None
    assert c.step.speedup == round(0.1 / 0.045, 3) and c.step.interval == [c.step.speedup] * 2
    assert [(p.phase, p.before_s, p.after_s) for p in c.phases] == [("startup", 2.0, 2.0),
                                                                   ("train", 5.0, 2.25)]


def test_a_loader_whose_line_moved_is_the_same_loader():
    c = compare_reports(_starved(), _fed(site="train.py:44"), ("a", "b"))
    [ch] = [x for x in c.changes if x.group == "loader"]
    assert (ch.setting, ch.where, ch.was, ch.advised) == ("num_workers", "train.py:44", "train.py:42", True)
    assert not any(x.setting == "DataLoader" for x in c.changes)
    assert c.fixes[0].applied == APPLIED


def test_an_advised_fix_left_alone_and_a_change_nobody_advised():
    before = _starved()
    after = _starved(step_s=0.098)
    after.evidence.loaders[0].batch_size = 64
    c = compare_reports(before, after, ("a", "b"))
    assert [f.applied for f in c.fixes] == [NOT_APPLIED]
    assert c.fixes[0].measured_run_s is None and c.fixes[0].held is None
    [ch] = c.changes
    assert (ch.setting, ch.before, ch.after, ch.advised) == ("batch_size", 32, 64, False)


def test_whole_batches_indexed_read_as_applied_with_the_settings_that_edit_changes():
    """The batch_index fix (a TensorDataset fetched a sample at a time) applied by --patch's edit:
    the loader's sampler becomes a BatchSampler, its batch_size None and its collate torch's
    default_convert; all three are that fix's, and its measured promise is held."""
    before = _starved()
    before.findings[0].fixes.insert(0, Fix("index whole batches", where="train.py:42",
                                           change={"batch_index": [False, True]}, expected_step_s=0.05))
    before.evidence.loaders[0].sampler = "RandomSampler"
    ev = _run(evidence(step_s=0.045, cores=8))
    lo = ev.loaders[0]
    lo.sampler, lo.batch_size, lo.collate_fn = "BatchSampler", None, "default_convert"
    c = compare_reports(before, diagnose(ev), ("a", "b"))
    fix = next(f for f in c.fixes if "batch_index" in f.change)
    assert fix.applied == APPLIED and fix.values == {"batch_index": "BatchSampler"}, fix
    assert fix.held is not None and fix.held > 1.0  # 100 -> 45 ms against 50 promised
    loader = {x.setting: x.advised for x in c.changes if x.group == "loader"}
    assert loader == {"batch_size": True, "sampler": True, "collate_fn": True}, c.changes
    out = io.StringIO()
    render_compare(c, out)
    assert "applied: whole batches indexed (sampler BatchSampler) at train.py:42" in out.getvalue()


def test_a_fix_on_a_setting_no_run_records_cannot_be_told_applied():
    before = _starved()
    before.findings.append(Finding("loop-overhead", "warning", 0.3, "Tracker.log takes 30%",
                                   fixes=[Fix("call it every 10 steps", where="train.py:80",
                                              change={"call every (steps)": [1, 10]})]))
    c = compare_reports(before, _fed(), ("a", "b"))
    assert [f.applied for f in c.fixes if "call every (steps)" in f.change] == [UNKNOWN]


def test_the_option_the_fix_named_changed_on_the_command_line_is_advised():
    before = _starved()
    fix = before.findings[0].fixes[0]
    fix.source = {"num_workers": {"kind": "option", "option": "--workers", "aliases": ["-j"]}}
    after = _fed()
    after.evidence.run.command += ["--workers", "2"]
    c = compare_reports(before, after, ("a", "b"))
    assert [(x.setting, x.before, x.after, x.advised) for x in c.changes if x.group == "script"] == [
        ("--workers", None, "2", True)]


def test_another_torch_is_said_first_and_another_program_holds_no_advice():
    c = compare_reports(_starved(), _fed(torch="2.14.0"), ("a", "b"))
    assert c.notes[0].startswith("the runs differ in machine or torch (torch 2.13.0 -> 2.14.0")
    assert c.changes[0].setting == "torch"
    other = _fed()
    other.evidence.run.target = "eval.py"
    c = compare_reports(_starved(), other, ("a", "b"))
    assert "different programs" in c.notes[0] and c.fixes == []


def test_the_same_run_twice_says_so_and_measures_nothing():
    r = _starved()
    c = compare_reports(r, r, ("runs/a", "runs/a"))
    assert c.notes[0].startswith("both sides are the same run")
    assert c.changes == [] and c.fixes == [] and c.step.interval is None and c.step.speedup == 1.0


def test_the_contract_has_the_designed_keys_and_nulls_for_the_unmeasured():
    c = compare_reports(_starved(), _fed(), ("a", "b")).to_contract()
    assert c["schema"] == SCHEMA
    for side in ("before", "after"):
        assert {"dir", "wall_s", "primary", "lead"} <= set(c[side])
    assert {"before_s", "after_s", "speedup", "interval"} <= set(c["run"]) & set(c["step"])
    assert {"phase", "before_s", "after_s"} == set(c["phases"][0])
    assert {"setting", "before", "after", "where"} <= set(c["changes"][0])
    assert {"text", "predicted_run_s", "measured_run_s", "predicted_step_s", "measured_step_s",
            "held"} <= set(c["fixes"][0])
    assert c["run"]["interval"] is None and c["run"]["why"] == "one run each: no interval"
    c = compare_reports(_starved(), _starved(step_s=0.098), ("a", "b")).to_contract()
    assert c["fixes"][0]["measured_run_s"] is None and c["fixes"][0]["held"] is None


def test_the_screen_fits_80_columns_and_the_page_draws_both_runs_on_one_scale():
    before = _starved()
    after = _fed()
    c = compare_reports(before, after, ("gpubottle-runs/train-before", "gpubottle-runs/train-after"))
    out = io.StringIO()
    render_compare(c, out, 80)
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "num_workers: 0 -> 2 (train.py:42)  advised" in text
    assert "predicted run 4.1 s, measured 4.2 s: 96% of the promised gain" in text
    page = io.StringIO()
    render_compare_html(c, page)
    html = page.getvalue()
    # 7 s full width (600 px): training 5 s before, 2.25 s after, on that one scale.
    assert 'width="428.6"' in html and 'width="192.9"' in html


def test_gpubottle_s_own_options_are_settings_its_output_paths_are_not():
    before, after = _fed(), _fed()
    after.evidence.run.command = ["gpubottle", "run", "--no-status", "--no-stacks", "--out", "y",
                                  "--json", "y.json", "train.py"]
    after.evidence.run.started_at = "later"
    c = compare_reports(before, after, ("a", "b"))
    assert [(x.setting, x.before, x.after) for x in c.changes] == [("gpubottle run --no-stacks", None, True)]
