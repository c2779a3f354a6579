"""Fixes of the run outside its training step, applied and timed: more workers (kept alive) on an
evaluation loader, saving less often, logging every N steps, and a training loader's worker fix
said for the whole run; and fixes applied in the user's own terms (issue 24): an OmegaConf
override the report prints, and its --patch applied to a copy of the script with `patch -p1`. Each
shape runs through the real CLI, the printed change is applied as a user would (the script's own
option for that setting, the override, the patch), and the run's wall time is held to the
prediction: it must come down by at least half of what the fix promised."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SCRIPTS, gpubottle, load_report
from fix_table import write_table
from script_lines import line_of

PHASES = SCRIPTS / "phases"
KNOBS = SCRIPTS / "knobs"
FIXES = ROOT / "tests" / "scripts" / "fixes"
RESULTS: list[tuple[str, str, float, float, float]] = []


@pytest.fixture(scope="module", autouse=True)
def table(request: pytest.FixtureRequest):
    yield
    write_table(request, "fixes of the whole run applied and timed (wall time launch to exit)",
                f"  {'shape':22s} {'change':26s} {'before':>7s} {'predicted':>9s} {'measured':>9s}",
                [f"  {shape:22s} {change[:26]:26s} {before:6.1f}s {predicted:8.1f}s {measured:8.1f}s"
                 for shape, change, before, predicted, measured in RESULTS])


def _run(tmp: Path, name: str, script: Path, *args: str, opts: tuple[str, ...] = (),
         cwd: Path | None = None) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    proc = gpubottle("run", "--no-status", "--out", str(tmp / name), "--json", str(out), *opts, str(script),
                     *args, timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load_report(out)


def _fix(report: dict[str, Any], key: str) -> dict[str, Any]:
    for f in report["findings"]:
        for fix in f["fixes"]:
            if key in fix["change"]:
                return fix  # type: ignore[no-any-return]
    raise AssertionError(f"no fix changes {key}: {[f['summary'] for f in report['findings']]}")


def _held(shape: str, before: dict[str, Any], after: dict[str, Any], fix: dict[str, Any]) -> None:
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    predicted = fix["expected_run_s"]
    change = ", ".join(f"{k}={v[1]}" for k, v in fix["change"].items())
    RESULTS.append((shape, change, b, predicted, a))
    assert predicted < b
    assert b - a >= (b - predicted) / 2, (shape, b, predicted, a)


def test_workers_on_the_evaluation_loader(tmp_path: Path):
    script = PHASES / "eval_slow_storage.py"
    args = ("--steps", "150", "--eval-every", "25")
    before = _run(tmp_path, "before", script, *args)
    fix = _fix(before, "num_workers")
    assert before["findings"][0]["phase"] == "eval" and fix["change"]["persistent_workers"][1] is True
    workers = fix["change"]["num_workers"][1]
    after = _run(tmp_path, "after", script, *args, "--val-workers", str(workers), "--val-persistent")
    _held("evaluation loader", before, after, fix)
    # Workers on the training loader would not have helped: none is proposed there.
    train_line = line_of(script, "train = ")
    assert not any(x["where"] and x["where"].endswith(f":{train_line}")
                   for f in before["findings"] for x in f["fixes"])


def test_keeping_an_evaluation_loaders_workers_alive(tmp_path: Path):
    """Each evaluation's iter() forks its workers again: the pass begins at that call, so the
    fork is the evaluation's restart cost, which persistent_workers=True removes."""
    script = PHASES / "eval_restart.py"
    before = _run(tmp_path, "before", script)
    fix = _fix(before, "persistent_workers")
    assert before["findings"][0]["phase"] == "eval" and fix["change"]["persistent_workers"][1] is True
    after = _run(tmp_path, "after", script, "--val-persistent")
    _held("evaluation restarts", before, after, fix)


def test_saving_less_often(tmp_path: Path):
    script = PHASES / "checkpoint_often.py"
    before = _run(tmp_path, "before", script)
    fix = _fix(before, "save every (steps)")
    after = _run(tmp_path, "after", script, "--save-every", str(fix["change"]["save every (steps)"][1]))
    _held("checkpoints", before, after, fix)


def test_logging_every_n_steps(tmp_path: Path):
    script = PHASES / "heavy_logging.py"
    before = _run(tmp_path, "before", script)
    fix = _fix(before, "call every (steps)")
    after = _run(tmp_path, "after", script, "--log-every", str(fix["change"]["call every (steps)"][1]))
    _held("per-step logging", before, after, fix)
    step_before, step_after = before["steps"]["mean_s"], after["steps"]["mean_s"]
    assert step_before / step_after >= 1 + (step_before / fix["expected_step_s"] - 1) / 2


def test_forcing_a_logs_writes_to_disk_less_often(tmp_path: Path):
    """Two log files forced to disk (os.fsync) after every step: named at the loop's call, at about
    the share of the step the loop's own clock gives it (py-spy sampling on its own clock: at a
    lower priority than the training it read 40-61% of a step that spends ~25% in one such call),
    and called every 10 steps it saves about what was promised."""
    script = PHASES / "fsync_logging.py"
    # (40 samples a second: ~250 in its 4-s loop, the share then within a few points)
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = _fix(before, "call every (steps)")
    assert fix["where"].endswith("fsync_logging.py:" + str(line_of(script, "persist(metrics")))
    after = _run(tmp_path, "after", script, "--sync-every", str(fix["change"]["call every (steps)"][1]))
    _held("fsync every step", before, after, fix)
    # The gain a step, promised against measured: at least 60% of the promise (at nice 10 the
    # promise was 1.6-2.2x for a measured 1.3x), and the promise at least a third of the gain (py-spy
    # on time read this fsync at 14-17% of a step where the script's own clock says ~25%).
    step_before, step_after = before["steps"]["mean_s"], after["steps"]["mean_s"]
    promised, measured = step_before / fix["expected_step_s"] - 1, step_before / step_after - 1
    assert 0.6 * promised <= measured <= 3 * promised, (promised, measured)


def test_a_training_loaders_worker_fix_said_for_the_run(tmp_path: Path):
    script = FIXES / "remote_reads.py"
    before = _run(tmp_path, "before", script, "--samples", "640")
    fix = _fix(before, "num_workers")
    after = _run(tmp_path, "after", script, "--samples", "640", "--num-workers",
                 str(fix["change"]["num_workers"][1]))
    _held("training loader (run)", before, after, fix)


def test_an_iterable_dataset_split_between_workers(tmp_path: Path):
    """Applied as the fix says (each worker its own share of the stream, and the workers), the
    run gets faster and trains on every record once."""
    script = FIXES / "stream_dataset.py"
    before = _run(tmp_path, "before", script)
    fix = _fix(before, "num_workers")
    workers = min(8, fix["change"]["num_workers"][1])  # a test's budget of processes on 2 cores
    proc = gpubottle("run", "--no-status", "--out", str(tmp_path / "after"), "--json",
                     str(tmp_path / "after.json"), str(script), "--workers", str(workers), "--shard",
                     timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "records trained on: 960 of 960" in proc.stdout  # every record once
    after = load_report(tmp_path / "after.json")
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    RESULTS.append(("iterable, split", f"num_workers={workers}, shard", b, fix["expected_run_s"], a))
    assert a < b


def test_spawned_workers_sharing_a_memory_mapped_array(tmp_path: Path):
    """Spawned workers each unpickle the array: named; applied (np.load(mmap_mode='r')), the
    workers share one copy and the run's peak memory falls by about what the finding said."""
    script = FIXES / "spawn_copies.py"
    before = _run(tmp_path, "before", script, "--mb", "300", "--workers", "3")
    f = next(x for x in before["findings"] if x["category"] == "oom-risk")
    copies = next(x["value"] for x in f["evidence"] if x["name"] == "worker_copies_bytes")
    assert "mmap_mode='r'" in f["fixes"][0]["text"]
    after = _run(tmp_path, "after", script, "--mb", "300", "--workers", "3", "--mmap")
    own = [r["evidence"]["memory"]["per_worker_private_peak_bytes"] * 3 for r in (before, after)]
    RESULTS.append(("spawned copies (GiB)", "mmap_mode='r' in the dataset", own[0] / (1 << 30),
                    (own[0] - copies) / (1 << 30), own[1] / (1 << 30)))
    assert own[0] - own[1] >= copies / 2, (own, copies)  # the workers' own memory fell as promised
    assert after["evidence"]["memory"]["peak_tree_bytes"] < before["evidence"]["memory"]["peak_tree_bytes"]
    assert not any(x["category"] == "oom-risk" for x in after["findings"])


def test_an_omegaconf_override(tmp_path: Path):
    script = KNOBS / "omegaconf_config.py"
    before = _run(tmp_path, "before", script)
    fix = _fix(before, "num_workers")
    n = fix["change"]["num_workers"][1]
    assert fix["how"].startswith(f"override data.num_workers={n}"), fix
    after = _run(tmp_path, "after", script, f"data.num_workers={n}")
    _held("OmegaConf override", before, after, fix)


def test_a_patch_applied_with_patch_p1(tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(KNOBS / "workers_option.py", work / "train.py")
    before = _run(tmp_path, "before", Path("train.py"), opts=("--patch", str(tmp_path / "fix.diff")),
                  cwd=work)
    fix = _fix(before, "num_workers")
    applied = subprocess.run(["patch", "-p1", "-i", str(tmp_path / "fix.diff")], cwd=work,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = _run(tmp_path, "after", work / "train.py", cwd=work)  # as the user runs it: no option
    assert after["evidence"]["loaders"][0]["num_workers"] == fix["change"]["num_workers"][1]
    _held("patch -p1", before, after, fix)


def test_evaluating_less_often_without_a_dataloader(tmp_path: Path):
    """nanoGPT's shape (issue 31.2): estimate_loss() draws its own batches every 25 steps; the
    eval-bound fix's interval, applied through the script's own option, against its prediction."""
    script = ROOT / "tests" / "scripts" / "real_code" / "eval_without_loader.py"
    # 120 forward passes a split per evaluation (the script's default is 40): at 40 the fix saved
    # about 1 s of a 7-8 s run, inside this VM's run-to-run spread (it failed 8.8 -> 9.3 s).
    before = _run(tmp_path, "before", script, "--eval-iters", "120")
    fix = _fix(before, "evaluate every (steps)")
    every = fix["change"]["evaluate every (steps)"][1]
    after = _run(tmp_path, "after", script, "--eval-iters", "120", "--eval-interval", str(every))
    _held("eval without a loader", before, after, fix)


def test_a_sort_between_the_steps_done_once_before_the_loop(tmp_path: Path):
    """A curriculum's order sorted again at each epoch's start (rules/phases/pauses.py): the
    finding's fix (a try, no number) applied as a user would, the sort moved before the loop. The
    run must come down by at least half of the gaps' time (measured when written: 7.3-8.4 s ->
    5.3 s, the gaps 2.1-2.3 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "sort_each_epoch.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "20"))
    [f] = [f for f in before["findings"] if f.get("phase") == "between-steps"]
    fix = f["fixes"][0]
    assert "do it once before the loop" in fix["text"] and fix.get("expected_run_s") is None, fix
    text = script.read_text()
    inside = "    if not args.once:\n        order = sorted(range(len(data)), key=difficulty)\n"
    assert inside in text
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / script.name).write_text(text.replace(inside, "").replace(
        "order = sorted(range(len(data)), key=difficulty) if args.once else None",
        "order = sorted(range(len(data)), key=difficulty)"))
    after = _run(tmp_path, "after", edited / script.name, opts=("--no-stacks",))
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    gaps = f["run_share"] * b
    RESULTS.append(("sort each epoch", "sorted once, before", b, b - gaps, a))
    assert b - a >= gaps / 2, (b, gaps, a)
    assert not [g for g in after["findings"] if g.get("phase") == "between-steps"]


def _patched_and_timed(tmp_path: Path, name: str, key: str, shape: str) -> None:
    """tests/scripts/real_code/NAME run with --patch from a folder of its own, the patch applied
    with `patch -p1` there, run again, and the run held to the prediction of the fix changing KEY."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "tests" / "scripts" / "real_code" / name, work / "train.py")
    before = _run(tmp_path, "before", work / "train.py", opts=("--patch", str(tmp_path / "fix.patch")),
                  cwd=work)
    fix = _fix(before, key)
    applied = subprocess.run(["patch", "-p1", "-i", str(tmp_path / "fix.patch")], cwd=work,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = _run(tmp_path, "after", work / "train.py", cwd=work)
    _held(shape, before, after, fix)


def test_a_loader_accelerate_rebuilt_fixed_by_its_patch(tmp_path: Path):
    """accelerator.prepare() rebuilds the user's DataLoader (issue 31.1): the --patch edits the
    user's DataLoader(...) line; applied with `patch -p1`, the run against its prediction."""
    _patched_and_timed(tmp_path, "accelerate_loader.py", "num_workers", "accelerate prepare()")


def test_workers_that_wait_are_not_offered_fewer_and_fewer_would_be_slower(tmp_path: Path):
    """Issue 31.6: eight workers whose samples each wait 0.3 ms, on this 2-core machine. The report
    offers no fewer workers (nor none); timed as plain python, the counts it did not offer are
    slower, which is why (whole runs, the same steps)."""
    import time as _time

    script = ROOT / "tests" / "scripts" / "real_code" / "waiting_workers.py"
    args = ("--steps", "200", "--read-ms", "0.3")
    r = _run(tmp_path, "run", script, *args)
    offered = [x["change"]["num_workers"] for f in r["findings"] for x in f["fixes"]
               if "num_workers" in x["change"]]
    assert all(new >= old for old, new in offered), offered
    walls = {}
    for workers in (8, 2, 0):
        t0 = _time.perf_counter()
        subprocess.run([sys.executable, str(script), *args, "--workers", str(workers)], check=True,
                       capture_output=True)
        walls[workers] = _time.perf_counter() - t0
    RESULTS.append(("waiting workers", "num_workers=2 (not offered)", walls[8], walls[8], walls[2]))
    RESULTS.append(("waiting workers", "num_workers=0 (not offered)", walls[8], walls[8], walls[0]))
    assert walls[2] > walls[8] and walls[0] > walls[2], walls


def test_workers_started_with_fork_instead_of_spawn(tmp_path: Path):
    """Issue 31.3: start-up spent pickling an in-memory dataset into four spawn-started workers;
    the patch (multiprocessing_context='fork') applied with `patch -p1`, the run against its
    prediction."""
    _patched_and_timed(tmp_path, "spawn_startup.py", "multiprocessing_context", "spawned workers")


def test_an_iterable_dataset_two_workers_each_read_whole_is_split(tmp_path: Path):
    """Two workers each reading the whole stream (unsharded-data): the fix splits it in __iter__,
    applied by editing the method as a user would; every record then arrives once an epoch and the
    run's wall time comes down by at least half of what the fix promised."""
    script = ROOT / "tests" / "scripts" / "real_code" / "stream_workers.py"
    before = _run(tmp_path, "before", script)
    [f] = [f for f in before["findings"] if f["category"] == "unsharded-data"]
    fix = f["fixes"][0]
    text = script.read_text()
    loop = "        for i in range(self.records):\n            yield self.read(i)\n"
    assert loop in text
    edited = tmp_path / script.name
    edited.write_text(text.replace(loop, (
        "        info = torch.utils.data.get_worker_info()\n"
        "        for i in range(self.records):\n"
        "            if info is None or i % info.num_workers == info.id:\n"
        "                yield self.read(i)\n")))
    after = _run(tmp_path, "after", edited)
    assert not any(x["category"] == "unsharded-data" for x in after["findings"])
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    RESULTS.append(("iterable, 2 workers", "split in __iter__", b, fix["expected_run_s"], a))
    assert fix["expected_run_s"] < b and b - a >= (b - fix["expected_run_s"]) / 2, (b, fix, a)


def test_predictions_gathered_with_a_list_and_one_cat_instead_of_a_cat_each_step(tmp_path: Path):
    """Steps that grow through the epoch (torch.cat of everything gathered so far at each step):
    the fix gathers in a list and concatenates once; the run must come down by at least half of
    what the fix promised (every step at the first steps' pace)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "cat_grow.py"
    before = _run(tmp_path, "before", script)
    [f] = [f for f in before["findings"] if f["category"] == "loop-overhead" and "longer as" in f["summary"]]
    fix = f["fixes"][0]
    text = script.read_text()
    edits = {
        "    all_logits = torch.empty(0, 100)\n    all_labels = torch.empty(0, dtype=torch.long)\n":
            "    all_logits, all_labels = [], []\n",
        "        all_logits = torch.cat([all_logits, out.detach()])\n"
        "        all_labels = torch.cat([all_labels, yb])\n":
            "        all_logits.append(out.detach())\n        all_labels.append(yb)\n"
            "    all_logits, all_labels = torch.cat(all_logits), torch.cat(all_labels)\n",
    }
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    edited = tmp_path / script.name
    edited.write_text(text)
    after = _run(tmp_path, "after", edited)
    assert not any("longer as" in x["summary"] for x in after["findings"])
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    RESULTS.append(("torch.cat each step", "a list, one cat at the end", b, fix["expected_run_s"], a))
    assert fix["expected_run_s"] < b and b - a >= (b - fix["expected_run_s"]) / 2, (b, fix, a)


def test_class_weights_read_from_the_labels_as_the_fix_says_shrink_start_up(tmp_path: Path):
    """Class weights counted through the training loader (tests/scripts/phases/class_weights.py):
    the start-up fix names the pass and says to read the labels from the dataset; applied so, the
    run must come down by at least half of the "up to" it names (measured when written: the pass
    2.6 s, the run 8.7 s)."""
    script = PHASES / "class_weights.py"
    before = _run(tmp_path, "before", script)
    f = next(f for f in before["findings"] if f["category"] == "startup-bound")
    fix = f["fixes"][0]
    assert "np.bincount(dataset.labels)" in fix["text"], fix
    up_to = next(v for k, v in before["account"][0]["parts"].items()
                 if k.startswith("a pass over the DataLoader before training"))
    fixed = tmp_path / script.name
    text = script.read_text()
    old = "for _, y in loader:\n    counts += torch.bincount(y, minlength=5)\n"
    assert old in text
    new = "counts += torch.bincount(torch.as_tensor(dataset.labels), minlength=5)\n"
    fixed.write_text(text.replace(old, new))
    after = _run(tmp_path, "after", fixed)
    b, a = before["source"]["duration_s"], after["source"]["duration_s"]
    RESULTS.append(("class_weights", "labels from the dataset", b, b - up_to, a))
    assert b - a >= up_to / 2, (b, a, up_to)
