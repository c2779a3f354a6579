"""The whole run through the real CLI: shapes whose cost is outside the training step get a verdict
that points at the right code, and the account of the run sums to its wall time.

Fixes applied and timed: tests/check_fixes/test_phase_fixes.py (make check-fixes)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import SCRIPTS, machine_loaded
from script_lines import line_of

from gpubottle import vocabulary as v

PHASES = SCRIPTS / "phases"


def _account_holds(report: dict[str, Any]) -> dict[str, Any]:
    """The account sums to the run's wall time (within 5%) and comes with the report."""
    entries = report["account"]
    total = sum(e["seconds"] for e in entries)
    assert abs(total - report["source"]["duration_s"]) <= 0.05 * report["source"]["duration_s"]
    assert report["evidence"]["account"] == entries
    return {e["phase"]: e for e in entries}


def test_an_evaluation_loader_on_slow_storage_is_the_verdict_with_its_own_fixes(replayed_run):
    script = PHASES / "eval_slow_storage.py"
    proc, report = replayed_run(script, "--steps", "150", "--eval-every", "25", "--val-samples", "192")
    assert proc.returncode == 0, proc.stderr
    f = report["findings"][0]
    assert report["primary"] == report["lead"] == v.DATA_STARVED and f["phase"] == "eval"
    fix = f["fixes"][0]
    # The validation loader's, not training's: its worker count is the --val-workers option.
    declared = line_of(script, 'add_argument("--val-workers"')
    assert fix["where"].endswith(f"eval_slow_storage.py:{declared}")
    workers = fix["change"]["num_workers"][1]
    assert fix["change"]["num_workers"][0] == 0 and workers >= 2
    assert fix["how"] == (f"run with --val-workers {workers}; or change its default (0) at "
                          f"{fix['where']}; run with --val-persistent")
    assert fix["expected_run_s"] < report["source"]["duration_s"]
    by = _account_holds(report)
    # Most of the time between the first batch and the exit (start-up, torch's import above all,
    # is a share of the run that a slow or loaded machine makes larger).
    looping = sum(e["seconds"] for p, e in by.items() if p not in ("startup", "teardown", "gpubottle"))
    assert by["eval"]["count"] == 6 and by["eval"]["seconds"] > 0.5 * looping, by
    text = proc.stdout + proc.stderr  # (`run` writes its report to stderr, `report` to stdout)
    assert "evaluation" in text and "Where the run's" in text


def test_checkpoints_every_few_steps_lead_with_the_save_call(replayed_run):
    script = PHASES / "checkpoint_often.py"
    proc, report = replayed_run(script, "--steps", "60")
    assert proc.returncode == 0, proc.stderr
    f = next(f for f in report["findings"] if f["category"] == v.CHECKPOINT_BOUND)
    # Beside busy programs the steps slow more than the saves (measured beside five: 95 ms steps,
    # the saves 15% of the run): the save is still named, the lead may be the step's verdict.
    assert f["phase"] == "checkpoint"
    if not machine_loaded(report):
        assert report["lead"] == v.CHECKPOINT_BOUND and report["findings"][0] is f, report["findings"][0]
    # Never the save named again as the loop's own code (beside busy programs py-spy's timeline
    # drifted 30% of the steps' samples into torch.save).
    assert not any(x["category"] == v.LOOP_OVERHEAD and "torch.save" in x["summary"]
                   for x in report["findings"])
    assert f["fixes"][0]["where"].endswith(f"checkpoint_often.py:{line_of(script, 'torch.save(')}")
    assert f["fixes"][0]["change"]["save every (steps)"][0] == 2
    # Saving is not "the model's own computation": no faster math for it.
    assert not any("torch.compile" in x["text"] for x in f["fixes"])
    by = _account_holds(report)
    assert by["checkpoint"]["count"] == 30 and by["checkpoint"]["bytes"] > 30 << 20
    # All of each save is what resuming needs (the weights and Adam's two moments of 3 layers of
    # 1024 x 1024): nothing to trim, and the fix that says so is never offered for it.
    weights = 3 * (1024 * 1024 + 1024) * 4
    state = by["checkpoint"]["state_bytes"]
    assert state >= 3 * weights and by["checkpoint"]["bytes"] - state < 64 << 10, by["checkpoint"]
    assert not any("resuming needs" in x["text"] for x in f["fixes"])


def test_heavy_logging_between_steps_is_named_not_folded_into_compute(replayed_run):
    script = PHASES / "heavy_logging.py"
    # 300 steps at 40 samples a second: ~250 main-thread samples even beside two busy programs
    # (at the default 10, 400 steps fell under the rule's minimum there, py-spy being niced). More
    # samples also caught log_metrics' calls into model.named_parameters() once read as forward.
    proc, report = replayed_run(script, "--steps", "300", opts=("--stack-rate", "40"))
    assert proc.returncode == 0, proc.stderr
    f = report["findings"][0]
    if f["category"] != v.LOOP_OVERHEAD:
        # py-spy (niced) starved of CPU by other programs: too few samples to tell the loop's code
        # from the model's, and the report says so rather than calling it the model's computation.
        assert machine_loaded(report), f
        assert f["category"] == v.COMPUTE_BOUND and f["open_question"], (f, report["evidence"].get("stacks"))
        assert "own computation" not in f["summary"]
        return
    assert f["category"] == v.LOOP_OVERHEAD and "log_metrics" in f["summary"]
    # at the loop's call, where `if step % N == 0:` goes (issue 31.8)
    assert f["fixes"][0]["where"].endswith(f"heavy_logging.py:{line_of(script, 'log_metrics(model, step')}")
    by = _account_holds(report)
    assert by["train"]["part_sites"]["other code"].startswith("log_metrics")


def test_a_slow_start_up_names_the_dataset_and_a_fine_evaluation_is_not_blamed(replayed_run):
    script = PHASES / "slow_startup.py"
    proc, report = replayed_run(script)
    assert proc.returncode == 0, proc.stderr
    f = next((x for x in report["findings"] if x["category"] == v.STARTUP_BOUND), None)
    # (Once, beside the suite's runs on a slow machine, no startup-bound finding came: the start-up's
    # parts and the stacks' samples say why if it recurs.)
    assert f is not None, (report["account"][0], report["source"]["collectors"].get("stacks"))
    assert f["phase"] == "startup" and "ParsedRecords.__init__" in f["summary"]
    assert f["fixes"][0]["where"].endswith(f"slow_startup.py:{line_of(script, 'def __init__')}")
    assert not any(x["phase"] == "eval" for x in report["findings"])  # the quick pass is fine
    by = _account_holds(report)
    assert by["eval"]["count"] == 1 and by["startup"]["share"] > 0.5


@pytest.mark.light
def test_a_pass_over_the_loader_before_training_is_start_up_at_its_loop_with_the_labels_fix(replayed_run):
    """Class weights counted through the training loader: 38 batches before the first step, each
    sample loaded an extra time. It was step 1 of the training (and, a probe falling in it, 4 s of
    gpubottle's own); it is start-up, named at the loop over the loader (tests/check_fixes applies
    the labels fix and times it)."""
    script = PHASES / "class_weights.py"
    proc, report = replayed_run(script, "--steps", "30", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    by = _account_holds(report)
    name = "a pass over the DataLoader before training (38 batches)"
    assert by["startup"]["parts"][name] >= 1200 * 0.002, by["startup"]
    loop = line_of(script, "for _, y in loader")
    assert by["startup"]["part_sites"][name].endswith(f"class_weights.py:{loop}")
    # (the pass is not gpubottle's: its heavier probes took their own spans, not the pass's seconds;
    # its samplers' share grows beside the suite's other runs: 0.62 s in all once)
    heavier = by["gpubottle"]["parts"].get("heavier probes (profiler window, sync sites, censuses)", 0.0)
    assert by["train"]["count"] == 30 and heavier < 0.5, by
    f = next(x for x in report["findings"] if x["category"] == v.STARTUP_BOUND)
    assert "np.bincount(dataset.labels)" in f["fixes"][0]["text"], f


def test_a_worker_count_from_the_command_line_is_fixed_there_and_as_a_patch(replayed_run, tmp_path):
    """The knob is -j/--workers (default 0): the fix says the option, and --patch changes the
    default where it is declared; the patch applies with `patch -p1` and the patched script runs."""
    import shutil
    import subprocess
    import sys

    work = tmp_path / "project"
    work.mkdir()
    script = work / "train.py"
    shutil.copy(SCRIPTS / "knobs" / "workers_option.py", script)
    patch = tmp_path / "fixes.patch"
    proc, report = replayed_run(script, opts=("--no-stacks",), cwd=work, patch=patch)
    assert proc.returncode == 0, proc.stderr
    fix = report["findings"][0]["fixes"][0]
    declared = line_of(script, 'add_argument("-j", "--workers"')
    assert fix["how"].startswith(f"run with --workers {fix['change']['num_workers'][1]} (or -j ")
    assert fix["where"] == f"train.py:{declared}" and fix["source"]["num_workers"]["kind"] == "option"
    assert "git apply" in proc.stderr
    subprocess.run(["patch", "-p1", "-i", str(patch)], cwd=work, check=True, capture_output=True)
    line = script.read_text().splitlines()[declared - 1]
    assert f"default={fix['change']['num_workers'][1]}" in line  # the default, where it is declared
    done = subprocess.run([sys.executable, str(script)], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and f"num_workers={fix['change']['num_workers'][1]}" in done.stdout


def test_an_iterable_dataset_worker_fix_says_how_to_split_the_stream(replayed_run):
    """Unsplit, every worker replays the whole stream: the fix says how to give each its share,
    and --try-fixes would not time more workers on it (an epoch of more steps is no speed-up)."""
    from gpubottle.report import Report
    from gpubottle.trials.plan import plan_trials

    proc, report = replayed_run(SCRIPTS / "fixes" / "stream_dataset.py", "--records", "640",
                                opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    fix = next(x for x in report["findings"][0]["fixes"] if "num_workers" in x["change"])
    assert "get_worker_info()" in fix["text"] and "trained on num_workers times" in fix["text"]
    assert fix["expected"].startswith("once each worker reads its own share")
    plan = plan_trials(Report.from_contract(report))
    assert not any("num_workers" in c.change for c in plan.candidates)
    assert any("num_workers" in s for s in plan.skipped)
