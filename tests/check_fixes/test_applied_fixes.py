"""Shapes where the advice used to be wrong when applied (issue: fixes that are right when applied):
run the script through the real CLI, apply the printed change to a copy of it, run the copy, and
hold the prediction to the measurement: the run must get faster by at least half the predicted
speed-up. `make check-fixes` runs these and prints the table of predicted vs measured."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, busy_programs, gpubottle, load_report
from fix_table import write_table
from script_lines import line_of

from gpubottle.rules import thresholds as th

FIXES = ROOT / "tests" / "scripts" / "fixes"
RESULTS: list[tuple[str, str, float | None, float]] = []


@pytest.fixture(scope="module", autouse=True)
def table(request: pytest.FixtureRequest):
    yield
    write_table(request, "fixes applied and timed (speed-up of the mean measured step)",
                f"  {'shape':28s} {'change':30s} {'predicted':>10s} {'measured':>9s}",
                [f"  {shape:28s} {change[:30]:30s} {f'{predicted:.2f}x' if predicted else '-':>10s} "
                 f"{measured:8.2f}x" for shape, change, predicted, measured in RESULTS])


def _run(tmp: Path, name: str, script: Path, *args: str, opts: tuple[str, ...] = (),
         env: dict[str, str] | None = None) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    proc = gpubottle("run", "--no-status", "--out", str(tmp / name), "--json", str(out), *opts,
                     str(script), *args, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load_report(out)


def _copy(script: Path, tmp: Path, edits: list[tuple[str, str]]) -> Path:
    """A copy of the script with the printed change applied as a user would, by editing it."""
    text = script.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    dest = tmp / script.name
    dest.write_text(text)
    return dest


def _passes(report: dict[str, Any]) -> float:
    """The evaluation passes' seconds, from the run's account."""
    return sum(a["seconds"] for a in report["evidence"]["account"] if a["phase"] == "eval")


def _fix_with(report: dict[str, Any], key: str) -> dict[str, Any]:
    for f in report["findings"]:
        for fix in f["fixes"]:
            if key in fix["change"]:
                return fix  # type: ignore[no-any-return]
    raise AssertionError(f"no fix changes {key}: {[f['summary'] for f in report['findings']]}")


def _held(shape: str, before: dict[str, Any], after: dict[str, Any], fix: dict[str, Any],
          floor: float = 0.8) -> None:
    """`floor`: how much slower a fix that says it may end slower can be, timed."""
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    predicted = before["steps"]["mean_s"] / fix["expected_step_s"] if fix.get("expected_step_s") else None
    change = ", ".join(f"{k}={v[1]}" for k, v in fix["change"].items())
    RESULTS.append((shape, change, predicted, measured))
    if predicted is not None:
        assert measured >= 1 + (predicted - 1) / 2, (shape, predicted, measured)
    elif "slower" not in fix["text"]:  # an experiment ("try") that promised not to slow the run
        assert measured > 1.0, (shape, measured)
    else:  # an experiment that said it may end slower: timed and shown, within reason
        assert measured > floor, (shape, measured)


def test_loader_built_every_epoch_is_fixed_by_building_it_once(tmp_path: Path):
    script = FIXES / "epoch_loader.py"
    before = _run(tmp_path, "before", script)
    assert before["primary"] == "data-starved"
    fix = before["findings"][0]["fixes"][0]
    # Built anew every epoch: no setting fixes it (persistent_workers alone, here the script's own
    # --persistent flag, changes nothing), so the fix stays at the DataLoader(...) call, unpatched.
    assert fix["change"] == {} and fix["how"] is None, fix
    line = int(fix["where"].rsplit(":", 1)[1])
    assert script.read_text().splitlines()[line - 1].strip().startswith("return DataLoader(")
    assert "built anew" in fix["text"] and "build it once" in fix["text"]
    # No hot function from the workers' start-up (a spawned worker re-imports the script).
    assert not any("<module>" in x["text"] for f in before["findings"] for x in f["fixes"])
    assert not any("cheaper" in x["text"] for x in before["findings"][0]["fixes"])
    fixed = _copy(script, tmp_path, [("    loader = make_loader(ds, True) if a.once else None",
                                      "    loader = make_loader(ds, True)"),
                                     ("        if not a.once:\n", "        if False:\n")])
    _held("loader rebuilt every epoch", before, _run(tmp_path, "after", fixed), fix)


def test_oversubscribed_threads_are_named_with_the_value_to_use(tmp_path: Path):
    script = FIXES / "threads.py"
    before = _run(tmp_path, "before", script)
    contention = next(f for f in before["findings"] if f["category"] == "cpu-contention")
    assert any(e["name"] == "torch_threads" and e["value"] == 8 for e in contention["evidence"])
    fix = _fix_with(before, "torch.set_num_threads")
    cores = int(before["evidence"]["cpu"]["cores_available"])
    assert fix["change"]["torch.set_num_threads"] == [8, cores]
    # The count comes from --threads: the fix says the option, and points where it is declared.
    declared = line_of(script, 'add_argument("--threads"')
    assert fix["where"].endswith(f"threads.py:{declared}")
    assert fix["how"].startswith(f"run with --threads {cores}")
    fixed = _copy(script, tmp_path, [("torch.set_num_threads(a.threads)", f"torch.set_num_threads({cores})")])
    after = _run(tmp_path, "after", fixed)
    _held("8 math threads on the cores", before, after, fix)
    assert after["steps"]["mean_s"] < before["steps"]["mean_s"]


def test_math_threads_beside_busy_programs_are_fewer_while_they_run(tmp_path: Path):
    """Two busy programs on 2 cores leave the run about one: torch's two threads wait for each other
    at every op, spinning while the others hold the cores (torch's OpenMP default). The fix (one
    thread, said as OMP_NUM_THREADS=1 where the job is launched) is applied that way and timed beside
    the same load. Measured by hand: 6-18 s as written, 0.7 s with one thread."""
    script = FIXES / "python_collate.py"
    with busy_programs(2):
        before = _run(tmp_path, "before", script, "--batches", "200")
        contention = next(f for f in before["findings"] if f["category"] == "cpu-contention")
        fix = _fix_with(before, "torch.set_num_threads")
        assert fix["change"]["torch.set_num_threads"] == [2, 1], contention
        assert "OMP_NUM_THREADS=1" in fix["text"] and "may be slower" in fix["text"]
        after = _run(tmp_path, "after", script, "--batches", "200", env={"OMP_NUM_THREADS": "1"})
    _held("2 threads beside 2 programs", before, after, fix)
    assert after["steps"]["mean_s"] * 2 < before["steps"]["mean_s"]


def _workers_applied(shape: str, script: Path, tmp: Path, *args: str) -> tuple[dict, dict]:
    before = _run(tmp, "before", script, *args)
    assert before["primary"] == "data-starved", before["findings"][0]["summary"]
    fix = _fix_with(before, "num_workers")
    new = fix["change"]["num_workers"][1]
    assert new > fix["change"]["num_workers"][0]
    # A number where the model holds; on cores that would be busy, an experiment to time.
    assert fix["expected_step_s"] is not None or fix["text"].startswith("try ")
    # The DataLoader(...) line the fix points at, with the printed value in place of the script's.
    fixed = _copy(script, tmp, [("num_workers=a.num_workers", f"num_workers={new}")])
    after = _run(tmp, "after", fixed, *args)
    assert after["evidence"]["loaders"][0]["num_workers"] == new  # the edit took
    _held(shape, before, after, fix)
    return before, after


def test_main_process_loading_with_a_spare_core(tmp_path: Path):
    before, _ = _workers_applied("num_workers=0, a core spare", FIXES / "cpu_loading.py", tmp_path)
    assert before["findings"][0]["fixes"][0]["change"]["num_workers"][1] >= 2
    busy = next(e for e in before["findings"][0]["evidence"] if e["name"] == "loader_busy")
    assert busy["value"] <= 1.0


def test_waiting_workers_more_than_cores(tmp_path: Path):
    _workers_applied("I/O-bound workers", FIXES / "remote_reads.py", tmp_path)
    # Already at many workers: no fix proposes fewer.
    many = _run(tmp_path, "many", FIXES / "remote_reads.py", "--num-workers", "16")
    for f in many["findings"]:
        for fix in f["fixes"]:
            nw = fix["change"].get("num_workers")
            assert nw is None or nw[1] >= nw[0] or "try" in fix["text"]


def test_workers_for_an_accumulating_loop_are_sized_for_its_batches_per_step(tmp_path: Path):
    """Four micro-batches per optimizer step: the step the clock sees draws four batches, so the
    worker count and the step it promises are for four (applied by editing the DataLoader call,
    the step must gain at least half of what was promised)."""
    before, after = _workers_applied("gradient accumulation, 4 batches a step", FIXES / "grad_accum.py",
                                     tmp_path)
    lo = before["evidence"]["loaders"][0]
    steps = len(before["steps"]["durations_s"])
    assert 3.5 <= lo["batches"] / steps <= 4.5, (lo["batches"], steps)  # four batches a step
    assert after["steps"]["mean_s"] < before["steps"]["mean_s"] / 2, (before["steps"], after["steps"])


def test_spinning_math_threads_are_not_counted_as_loading(tmp_path: Path):
    """The loading thread's own CPU: torch's pool spins after each backward, which a process-wide
    clock would count as loading (the issue saw "busy 184% of a core")."""
    script = _copy(FIXES / "cpu_loading.py", tmp_path, [("    torch.set_num_threads(1)\n", "")])
    report = _run(tmp_path, "spin", script)
    f = next(x for x in report["findings"] if x["category"] in ("data-starved", "preprocessing-bound"))
    busy = next(e for e in f["evidence"] if e["name"] == "loader_busy")
    assert busy["value"] <= 1.0
    assert report["evidence"]["cpu"]["main_thread_cores"] <= 1.05


def test_copy_on_read_dataset_is_named_with_its_bound_and_fix(tmp_path: Path):
    # 30 s, not 18: a worker's exact (PSS) reads come every read's cost / PSS_COST_SHARE, 12-20 s
    # apart for these 1.5-GB workers on a slow hour, and the copies (~700 MiB a worker by 17 s, plain
    # python, 3 runs of 3) show only at those reads: an 18-s run ended before its second one.
    script = FIXES / "object_dataset.py"
    report = _run(tmp_path, "objects", script, "--seconds", "30")
    oom = next(f for f in report["findings"] if f["category"] == "oom-risk")
    assert any(e["name"] == "workers_growth_bytes_per_s" for e in oom["evidence"])
    assert any(e["name"] in ("copy_bound_bytes", "exhaustion_s") and "each worker" in e["text"]
               for e in oom["evidence"])
    assert "numpy array" in oom["fixes"][0]["text"]
    assert oom["fixes"][0]["where"].endswith(f"object_dataset.py:{line_of(script, 'def __getitem__')}")
    # Applied (one numpy array): the workers share it, and nothing grows.
    fixed = _copy(script, tmp_path, [("self.rows = data if as_array else", "self.rows = data if True else")])
    after = _run(tmp_path, "array", fixed, "--seconds", "30")
    assert not any(f["category"] == "oom-risk" for f in after["findings"])
    grew = after["evidence"]["memory"]["workers_growth_bytes_per_s"] or 0
    assert grew < 0.1 * oom["evidence"][1]["value"]


def test_background_load_is_contention_beside_the_input_verdict(tmp_path: Path):
    """Shape 7: two busy programs beside an I/O-bound loader: still data-starved (the loader waits on
    its storage), and the load is a cpu-contention finding of its own."""
    import subprocess
    import sys

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        report = _run(tmp_path, "loaded", ROOT / "examples" / "data_starved.py", "--epochs", "1",
                      "--samples", "384", "--num-workers", "1")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert report["primary"] == "data-starved", report["findings"][0]["summary"]
    contention = next(f for f in report["findings"] if f["category"] == "cpu-contention")
    assert "other programs" in contention["summary"]


def test_a_generator_fed_loop_moves_batch_making_into_workers(tmp_path: Path):
    """A loop with no DataLoader that makes its batches itself: the fix (an IterableDataset read by
    DataLoader workers, each making its share) is applied with --workers and timed."""
    script = FIXES / "generator_batches.py"
    # 720 batches: ~3 s of loop on a fast machine, 30 stack samples (240 gave 11, under the 15 the
    # rule needs to measure the loop's batch-making: the run was then compute-bound, question open).
    batches = ("--batches", "720")
    before = _run(tmp_path, "before", script, *batches)
    f = before["findings"][0]
    assert before["primary"] == "data-starved", f["summary"]
    fix = _fix_with(before, "num_workers")
    assert "IterableDataset" in fix["text"] and "get_worker_info" in fix["text"]
    assert fix["expected_step_s"] is not None or fix["text"].startswith("try ")
    new = fix["change"]["num_workers"][1]
    after = _run(tmp_path, "after", script, *batches, "--workers", str(new))
    _held("batches made by the loop", before, after, fix)


def test_a_two_rank_jobs_slow_loader_is_fixed_on_every_rank(tmp_path: Path):
    """torchrun, gloo: rank 1 reads slowly with one worker and sets the pace. The fix for it is
    computed on its share of the cores and said as "try" (the ranks' workers compete for the same
    cores: measured 50-65% of the predicted gain, too close to promise); applied to every rank (the
    same script), the job must get faster."""
    script = ROOT / "tests" / "scripts" / "ranks" / "ddp_train.py"
    job = ("--nproc-per-node", "2", "--torchrun-args", "--standalone")
    args = ("--slow-rank", "1", "--sleep-ms", "3", "--steps", "60")
    before = _run(tmp_path, "before", script, *args, "--workers", "1", opts=job)
    assert before["evidence"]["shown_rank"] == 1 and before["primary"] == "data-starved"
    fix = _fix_with(before, "num_workers")
    assert fix["text"].startswith("try num_workers=") and fix.get("expected_step_s") is None
    new = fix["change"]["num_workers"][1]
    after = _run(tmp_path, "after", script, *args, "--workers", str(new), opts=job)
    _held("2 ranks, rank 1 slow reads", before, after, fix)


def test_slow_copy_on_read_is_found_from_its_growth_and_the_array_fix_stops_it(tmp_path: Path):
    """Issue 31.7: two forked workers reading two records a step from 600k held as dicts copy the
    dataset at well under 1 MiB/s; it is still named, from the straight rise of their own memory,
    and stored as one numpy array (--array) they share it and nothing grows."""
    script = ROOT / "tests" / "scripts" / "real_code" / "slow_copies.py"
    report = _run(tmp_path, "dicts", script, "--batch", "2", "--seconds", "22")
    grew = report["evidence"]["memory"]["workers_growth_bytes_per_s"]
    # Written at ~0.6 MB/s, under the growth threshold (the shape it alone missed); a faster host
    # ran it at 1.14 MB/s: named either way (tests/unit/rules/memory holds both sides of it).
    assert grew < 2 * th.GROWTH_MIN_BYTES_PER_S, grew
    oom = next(f for f in report["findings"] if f["category"] == "oom-risk")
    assert any(e["name"] == "workers_growth_bytes_per_s" for e in oom["evidence"])
    assert "numpy array" in oom["fixes"][0]["text"]
    after = _run(tmp_path, "array", script, "--batch", "2", "--seconds", "22", "--array")
    assert not any(f["category"] == "oom-risk" for f in after["findings"])
    # Nothing rises in a line: a slope a quarter of the dicts' at most, or no line at all (the
    # workers' PSS is read seconds apart: one step of ~65 MB each once they start, then flat, was
    # fitted at 7.5 MB/s, R^2 0.54, on 2026-12-04; the rule names no copying there either).
    m = after["evidence"]["memory"]
    assert ((m["workers_growth_bytes_per_s"] or 0) < 0.25 * grew
            or (m["workers_growth_r2"] or 0) < th.COPY_ON_READ_R2), (m["workers_growth_bytes_per_s"], grew)


def test_a_float64_model_is_offered_float32_and_it_halves_the_step(tmp_path: Path):
    """model.double() after numpy's float64 data: the fix says float32 does the same arithmetic in
    about half the time (2.3x measured on the shape's MLP when written). Applied (--float32: the
    model and its input in float32), the step must be at least 1.5x faster."""
    script = ROOT / "tests" / "scripts" / "real_code" / "double_precision.py"
    before = _run(tmp_path, "before", script)
    [fix] = [x for f in before["findings"] for x in f["fixes"] if x["text"].startswith("the model trains "
                                                                                      "in float64")]
    after = _run(tmp_path, "after", script, "--float32")
    assert not any(x["text"].startswith("the model trains in float64")
                   for f in after["findings"] for x in f["fixes"])
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    RESULTS.append(("double_precision", "model.float(), float32 inputs", None, measured))
    assert measured >= 1.5, (before["steps"], after["steps"], fix)


def test_an_optimizers_per_tensor_loop_is_fused_as_the_trial_measured(tmp_path: Path):
    """AdamW over 242 small tensors on a CPU steps as a per-tensor loop (torch's default there):
    the fix is fused=True at its constructor, timed by --try-fixes in the diagnosis; applied by
    editing the line, the step must gain at least half of what the trial measured."""
    script = ROOT / "tests" / "scripts" / "real_code" / "many_small_params.py"
    before = _run(tmp_path, "before", script, opts=("--try-fixes", "--yes"))
    fix = _fix_with(before, "fused")
    assert fix["text"].startswith("measured on this machine: fused=True"), fix
    edited = _copy(script, tmp_path, [("weight_decay=0.01)", "weight_decay=0.01, fused=True)")])
    after = _run(tmp_path, "after", edited)
    assert not any("fused" in x["change"] for f in after["findings"] for x in f["fixes"])
    assert after["evidence"]["optimizer_work"]["impl"] == "fused"
    _held("many_small_params", before, after, fix)


@pytest.mark.parametrize("shape, args, workers", [("fixes/tensor_workers.py", (), 4),
                                                    ("real_code/tensor_rows.py", ("--steps", "600"), 0),
                                                    ("real_code/tabular_rows.py", (), 0),
                                                    ("real_code/batch_sampler_rows.py", (), 0),
                                                    ("real_code/weighted_rows.py", (), 0)])
def test_in_memory_batches_made_a_sample_at_a_time_are_timed_and_patched(
        tmp_path: Path, shape: str, args: tuple[str, ...], workers: int):
    """An in-memory TensorDataset (or the user's tabular Dataset whose __getitem__ only indexes its
    tensors) fetched a sample at a time: by four workers that wait for work while the loop pays to
    take their batches, or by the loop itself (batch_size=, or torch's BatchSampler passed as
    batch_sampler=, or batch_size= over the script's own WeightedRandomSampler). --try-fixes times whole
    batches indexed (the batch_index fix, with no workers) and num_workers=0 alone; the fastest
    leads, measured, and --patch writes it. Applied with `patch`, as a user would, the step must
    gain at least half of what the trial measured (measured here when written: tensor_workers
    4.21x in the trial, 4.02x applied)."""
    work = tmp_path / "work"
    work.mkdir()
    script = work / Path(shape).name
    script.write_text((ROOT / "tests" / "scripts" / shape).read_text())
    proc = gpubottle("run", "--no-status", "--try-fixes", "--yes", "--patch", "fix.patch", "--out",
                     str(tmp_path / "before"), "--json", str(tmp_path / "before.json"), script.name,
                     *args, cwd=work, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    before = load_report(tmp_path / "before.json")
    fix = before["findings"][0]["fixes"][0]
    assert fix["text"].startswith("measured on this machine: "), fix
    assert fix["change"]["batch_index"] == [False, True], fix
    assert fix["change"].get("num_workers", [0, 0]) == [workers, 0], fix
    diff = (work / "fix.patch").read_text()
    applied = subprocess.run(["patch", "-p1", "-i", "fix.patch"], cwd=work, capture_output=True, text=True)
    assert applied.returncode == 0, (applied.stdout, applied.stderr, diff)
    assert ("sampler=torch.utils.data.BatchSampler(" in script.read_text()  # batch_size= as written
            or "batch_size=None, sampler=BatchSampler(" in script.read_text()), diff  # batch_sampler=
    after = _run(tmp_path, "after", script, *args)
    _held(Path(shape).stem, before, after, fix)


def test_a_teacher_under_no_grad_as_the_fix_says_is_faster(tmp_path: Path):
    """A distillation's teacher called with autograd on (tests/scripts/real_code/teacher_autograd.py):
    the first fix puts its call under torch.no_grad(); applied as it says, the step must be faster
    (a try: no number promised; the text quotes 1.6-1.7 s -> 0.7 s for 300 steps)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "teacher_autograd.py"
    before = _run(tmp_path, "before", script, "--steps", "400", opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert "with torch.no_grad(): out = teacher(x)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "    soft = teacher(x)\n", "    with torch.no_grad():\n        soft = teacher(x)\n")]),
        "--steps", "400", opts=("--no-stacks",))
    assert not after["evidence"]["model_calls"]["untrained"]
    _held("teacher_autograd", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_two_losses_backpropagated_as_their_sum_as_the_fix_says_are_faster(tmp_path: Path):
    """A shared trunk's two losses backpropagated one by one, retain_graph=True on the first
    (tests/scripts/real_code/two_losses.py): the first fix backpropagates their sum once; applied
    as it says, the step must be faster (a try; the text quotes 14.4-14.6 ms -> 7.6-8.4 ms)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "two_losses.py"
    before = _run(tmp_path, "before", script, "--steps", "300", opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert "(loss_a + loss_b).backward()" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "            loss_a.backward(retain_graph=True)\n            loss_b.backward()\n",
        "            (loss_a + loss_b).backward()\n")]), "--steps", "300", opts=("--no-stacks",))
    assert after["evidence"]["model_calls"]["again"] is None
    _held("two_losses", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.3, (before["steps"], after["steps"])


def test_an_evaluation_in_larger_batches_as_the_fix_says_takes_less_of_the_run(tmp_path: Path):
    """An evaluation DataLoader of batch_size=1 (tests/scripts/real_code/eval_one_by_one.py): the fix
    says the training's batch size, through the script's option; applied as it says, the passes
    must take a fifth of their time at most (a try; the text quotes 0.84 s -> 0.03 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "eval_one_by_one.py"

    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    [f] = [f for f in before["findings"] if f["category"] == "eval-bound"]
    fix = f["fixes"][0]
    assert fix["change"] == {"batch_size": [1, 128]} and "--eval-batch 128" in fix["how"], fix
    after = _run(tmp_path, "after", script, "--eval-batch", "128", opts=("--no-stacks",))
    assert not [f for f in after["findings"] if f["category"] == "eval-bound"], after["findings"]
    RESULTS.append(("eval_one_by_one (passes)", "batch_size=128", None, _passes(before) / _passes(after)))
    assert _passes(after) <= _passes(before) / 5, (_passes(before), _passes(after))


def test_an_evaluation_called_on_batches_as_the_fix_says_takes_less_of_the_run(tmp_path: Path):
    """Validation one held-out row a call, no DataLoader (tests/scripts/real_code/eval_per_row.py):
    the fix says batches of rows at the model's call; applied as it says (256 rows a call), the
    passes must take a fifth of their time at most (a try; the text quotes 67 ms -> 0.7 ms a pass
    of 3,000 rows)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "eval_per_row.py"

    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    [f] = [f for f in before["findings"] if f["category"] == "eval-bound"]
    fix = f["fixes"][0]
    assert "call it on batches of rows instead" in fix["text"] and fix["where"].endswith(":25"), fix
    edited = _copy(script, tmp_path, [
        ("        for i in range(len(Xv)):\n            pred = model(Xv[i:i + 1])\n"
         "            err += float((pred - Yv[i:i + 1]).pow(2).sum())",
         "        for i in range(0, len(Xv), 256):\n            pred = model(Xv[i:i + 256])\n"
         "            err += float((pred - Yv[i:i + 256]).pow(2).sum())")])
    after = _run(tmp_path, "after", edited, opts=("--no-stacks",))
    assert not [f for f in after["findings"] if f["category"] == "eval-bound"], after["findings"]
    RESULTS.append(("eval_per_row (passes)", "256 rows a call", None, _passes(before) / _passes(after)))
    assert _passes(after) <= _passes(before) / 5, (_passes(before), _passes(after))


def test_statistics_computed_once_before_the_loop_as_the_fix_says_are_faster(tmp_path: Path):
    """The whole dataset's mean and std recomputed at every step (tests/scripts/real_code/
    stats_each_step.py): the first fix moves the statement before the loop and promises the step
    without it; applied as it says, the step must gain at least half of that (measured when
    written: 9.7x promised from the samples' 90%, 63x applied)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "stats_each_step.py"
    before = _run(tmp_path, "before", script, "--steps", "120", opts=("--stack-rate", "50"))
    fix = before["findings"][0]["fixes"][0]
    assert "before the loop" in fix["text"] and fix["expected_step_s"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    mean, std = X.mean(0), X.std(0)\n", ""),
        ("for _step in range(a.steps):\n",
         "mean, std = X.mean(0), X.std(0)\nfor _step in range(a.steps):\n")]),
        "--steps", "120", opts=("--no-stacks",))
    _held("stats_each_step", before, after, fix)


def test_rows_indexed_once_as_the_fix_says_are_faster(tmp_path: Path):
    """Batches stacked a row at a time in the loop (tests/scripts/real_code/stack_by_hand.py): the
    fix for the comprehension says `X[idx]`; applied to both comprehensions, the step must be
    faster (a try; measured when written: 1.5 ms -> 0.5 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "stack_by_hand.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "50"))
    [f] = [f for f in before["findings"] if f["category"] == "loop-overhead"]
    fix = f["fixes"][0]
    assert "torch.stack([X[j] for j in idx]) is X[idx]" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("torch.stack([X[j] for j in idx])", "X[idx]"), ("torch.stack([y[j] for j in idx])", "y[idx]")]),
        opts=("--no-stacks",))
    _held("stack_by_hand", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_a_list_stacked_into_one_array_as_the_fix_says_makes_batches_faster(tmp_path: Path):
    """A collate that builds each batch with torch.tensor(list of numpy arrays) (tests/scripts/
    real_code/list_collate.py): the first fix names the collate and what its time goes to, the
    try is torch.from_numpy(np.stack(xs)); applied, the step must be faster (measured when
    written: 4.4 ms -> 0.9 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "list_collate.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "collate" in fix["text"] and "torch.from_numpy(np.stack(xs))" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("return torch.tensor(xs),", "return torch.from_numpy(np.stack(xs)),")]), opts=("--no-stacks",))
    _held("list_collate", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 2.0, (before["steps"], after["steps"])


def test_ids_padded_a_row_at_a_time_as_the_fix_says_make_batches_faster(tmp_path: Path):
    """A collate that pads each batch's token ids value by value, `out[i, j] = v` (tests/scripts/
    real_code/tokenize_pad.py): the first fix names that line and says to write a row in one op;
    applied so, the step must be faster (a try; measured when written: 5.0x a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "tokenize_pad.py"
    before = _run(tmp_path, "before", script, "--steps", "150", opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "out[i, :len(x)] = torch.tensor(x)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        for j, v in enumerate(x):\n            out[i, j] = v\n",
         "        out[i, :len(x)] = torch.tensor(x)\n")]), "--steps", "150", opts=("--no-stacks",))
    _held("tokenize_pad", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 2.0, (before["steps"], after["steps"])


def test_a_torchscript_model_compiled_from_its_eager_module_as_the_fix_says_runs(tmp_path: Path):
    """`model = torch.jit.script(Net())` (tests/scripts/real_code/scripted_model.py): torch.compile
    raises on the TorchScript module, so the fix compiles Net() in place of the scripting call.
    Applied so, the run must finish, and compiling must cost about what the fix says (15-20 s for a
    small MLP, a few from the cache: measured when written 16.2 s and 2.6 s). Not a speed-up: the
    steps after it are about TorchScript's on a CPU."""
    script = ROOT / "tests" / "scripts" / "real_code" / "scripted_model.py"
    before = _run(tmp_path, "before", script, "--steps", "200", opts=("--no-stacks",))
    [f] = [f for f in before["findings"] if f["category"] == "compute-bound"]
    assert "model = torch.compile(Net()) in place of the torch.jit.script call" in f["fixes"][-1]["text"]
    fixed = _copy(script, tmp_path, [("model = torch.jit.script(Net())", "model = torch.compile(Net())")])
    # A first compile (an empty inductor cache, as on the user's first run), then a cached one.
    cache = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    after = _run(tmp_path, "after", fixed, "--steps", "200", opts=("--no-stacks",), env=cache)
    again = _run(tmp_path, "again", fixed, "--steps", "200", opts=("--no-stacks",), env=cache)
    added = after["source"]["duration_s"] - before["source"]["duration_s"]
    cached = again["source"]["duration_s"] - before["source"]["duration_s"]
    RESULTS.append(("scripted_model", "torch.compile(Net())", None,
                    before["steps"]["mean_s"] / after["steps"]["mean_s"]))
    print(f"  scripted_model: compiling added {added:.1f} s to the run, {cached:.1f} s cached")
    assert 8 <= added <= 45 and cached <= 8, (added, cached)


def test_float16_autocast_replaced_as_the_fix_says_is_faster_on_a_cpu_without_float16(tmp_path: Path):
    """CPU autocast to float16 on a CPU without float16 instructions (tests/scripts/real_code/
    fp16_autocast.py): the first fix is bfloat16 where the CPU computes it, else float32; applied
    so, the step must be at least 3x faster (a try; measured when written: 18.7x to bfloat16 under
    `gpubottle run`; by hand, one thread, 28 ms -> 2.7 ms in float32, 2.0 ms in bfloat16)."""
    from gpubottle.collect.system import cpu_bf16, cpu_fp16

    if cpu_fp16() is not False:
        pytest.skip("this CPU computes float16 (or does not say): nothing to fix")
    script = ROOT / "tests" / "scripts" / "real_code" / "fp16_autocast.py"
    before = _run(tmp_path, "before", script, "--steps", "60", opts=("--no-stacks",))
    fix = next(f for f in before["findings"] if f["category"] == "emulated-math")["fixes"][0]
    assert "no float16 instructions" in fix["text"], fix
    native = cpu_bf16() is True
    assert ("dtype=torch.bfloat16" in fix["text"]) == native, fix
    edit = (("dtype=torch.float16", "dtype=torch.bfloat16") if native else
            ('    with torch.autocast("cpu", dtype=torch.float16):', "    if True:"))
    after = _run(tmp_path, "after", _copy(script, tmp_path, [edit]), "--steps", "60", opts=("--no-stacks",))
    _held("fp16_autocast", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 3.0, (before["steps"], after["steps"])


def test_an_lstm_cell_loop_replaced_by_nn_lstm_as_the_fix_says_is_faster(tmp_path: Path):
    """An LSTMCell stepped in Python over each embedded sequence (tests/scripts/real_code/
    rnn_cell_loop.py): the first fix is nn.LSTM over the sequence, out, (h, c) = self.lstm(e), then
    the per-step layer once on out; applied so, the step must be faster (a try; measured when
    written: 46.9 ms -> 16.0 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "rnn_cell_loop.py"
    before = _run(tmp_path, "before", script, "--steps", "80", opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert "nn.LSTM(128, 128, batch_first=True)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.cell = nn.LSTMCell(H, H)\n", "        self.lstm = nn.LSTM(H, H, batch_first=True)\n"),
        ("        h = torch.zeros(x.size(0), H)\n        c = torch.zeros(x.size(0), H)\n", ""),
        ("        outs = []\n        for t in range(x.size(1)):\n"
         "            h, c = self.cell(e[:, t], (h, c))\n"
         "            outs.append(self.out(h))\n        return torch.stack(outs, 1)\n",
         "        out, (h, c) = self.lstm(e)\n        return self.out(out)\n")]),
        "--steps", "80", opts=("--no-stacks",))
    assert not after["evidence"]["model_calls"]["cells"], after["evidence"]["model_calls"]
    _held("rnn_cell_loop", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.8, (before["steps"], after["steps"])


def test_a_file_read_once_as_the_fix_says_makes_batches_faster(tmp_path: Path):
    """A CSV dataset that reads the whole file for each sample's line (tests/scripts/real_code/
    csv_rows.py): the first fix names __getitem__ and says the same file is read again for every
    sample; applied as it says (the lines kept from __init__), the step must be faster (a try;
    measured when written: 44.5 ms -> 1.5 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "csv_rows.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "Rows.__getitem__" in fix["text"] and "the same file again for every sample" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("            self.n = sum(1 for _ in f)\n",
         "            self.lines = f.readlines()\n        self.n = len(self.lines)\n"),
        ("        with open(self.path) as f:\n            line = f.readlines()[i]\n",
         "        line = self.lines[i]\n")]),
        opts=("--no-stacks",))
    _held("csv_rows", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 5.0, (before["steps"], after["steps"])


def test_statistics_made_once_in_init_as_the_fix_says_make_batches_faster(tmp_path: Path):
    """A dataset computing the whole array's mean and std in __getitem__ for every sample
    (tests/scripts/real_code/norm_in_getitem.py): the first fix names that statement and says to
    compute it once in __init__; applied so, the step must be faster (a try; measured when written:
    59.9 ms -> 2.2 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "norm_in_getitem.py"
    before = _run(tmp_path, "before", script)
    fix = before["findings"][0]["fixes"][0]
    lines = script.read_text().splitlines()
    line = int(fix["where"].rsplit(":", 1)[1])
    assert lines[line - 1].strip() in ("mean = self.x.mean(axis=0)", "std = self.x.std(axis=0)"), fix
    assert "the same result for every sample" in fix["text"] and "once in __init__" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.x, self.y = x, y\n",
         "        self.x, self.y = x, y\n        self.mean = x.mean(axis=0)\n"
         "        self.std = x.std(axis=0)\n"),
        ("        mean = self.x.mean(axis=0)\n        std = self.x.std(axis=0)\n"
         "        return torch.from_numpy((self.x[i] - mean) / std)",
         "        return torch.from_numpy((self.x[i] - self.mean) / self.std)")]),
        opts=("--no-stacks",))
    _held("norm_in_getitem", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 5.0, (before["steps"], after["steps"])


def test_indices_drawn_once_an_epoch_as_the_fix_says_make_batches_faster(tmp_path: Path):
    """A hand-written balancing sampler drawing each index with np.random.choice over all the
    weights (tests/scripts/real_code/weighted_draws.py): the first fix names the draw's line and
    says to draw the epoch's indices in one call; applied so, the step must be faster (a try;
    measured when written: 94.6 ms -> ~2 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "weighted_draws.py"
    before = _run(tmp_path, "before", script)
    fix = before["findings"][0]["fixes"][0]
    line = int(fix["where"].rsplit(":", 1)[1])
    assert "np.random.choice(self.n, p=self.p)" in script.read_text().splitlines()[line - 1], fix
    assert "size=n, p=p" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        for _ in range(self.n):\n            yield int(np.random.choice(self.n, p=self.p))\n",
         "        yield from np.random.choice(self.n, size=self.n, p=self.p).tolist()\n")]),
        opts=("--no-stacks",))
    _held("weighted_draws", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 5.0, (before["steps"], after["steps"])


def test_a_replay_batch_stacked_as_arrays_as_the_fix_says_is_faster(tmp_path: Path):
    """A DQN-shaped loop making its batch with torch.tensor from lists of numpy arrays on four lines
    (tests/scripts/real_code/replay_buffer.py): the first fix names them together, says they feed
    the model (no "every N steps") and to hand torch one array; applied so (np.stack for the states,
    np.asarray for the numbers), the step must be faster (a try; measured when written: 1.6 ms ->
    1.0 ms, and 1.8 -> 1.4 ms on a slower hour)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "replay_buffer.py"
    before = _run(tmp_path, "before", script)
    fix = before["findings"][0]["fixes"][0]
    assert "like it)" in fix["text"] and "torch.from_numpy(np.stack(xs))" in fix["text"], fix
    assert "feeds the model" in fix["text"] and not fix["change"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("torch.tensor([b[0] for b in batch])", "torch.from_numpy(np.stack([b[0] for b in batch]))"),
        ("torch.tensor([b[3] for b in batch])", "torch.from_numpy(np.stack([b[3] for b in batch]))"),
        ("torch.tensor([b[1] for b in batch])", "torch.from_numpy(np.asarray([b[1] for b in batch]))"),
        ("torch.tensor([b[2] for b in batch])",
         "torch.from_numpy(np.asarray([b[2] for b in batch], dtype=np.float32))"),
        ("torch.tensor([b[4] for b in batch], dtype=torch.float32)",
         "torch.from_numpy(np.asarray([b[4] for b in batch], dtype=np.float32))")]),
        opts=("--no-stacks",))
    _held("replay_buffer", before, after, fix)
    # (1.57x and 1.27x in two runs when written: the env's Python and the Adam step stay)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.15, (before["steps"], after["steps"])


def test_a_head_built_once_in_init_as_the_fix_says_trains_and_is_faster(tmp_path: Path):
    """A head built inside forward at every call (tests/scripts/real_code/layer_in_forward.py): the
    first fix names the line that builds it and says to build it once in __init__ as self.head;
    applied so (the optimizer, built after the model, then trains it too), no module is left
    outside the model and the step must be faster (a try; measured when written: 11.3 -> 7.3 ms a
    step over 300 steps)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "layer_in_forward.py"
    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    fix = next(f for f in before["findings"] if f["category"] == "untrained-layer")["fixes"][0]
    assert "self.head = nn.Linear(1024, 1024)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.body = nn.Sequential(nn.Linear(256, 1024), nn.ReLU())\n",
         "        self.body = nn.Sequential(nn.Linear(256, 1024), nn.ReLU())\n"
         "        self.head = nn.Linear(1024, 1024)\n"),
        ("        head = nn.Linear(1024, 1024)\n        return nn.functional.relu(head(h))",
         "        return nn.functional.relu(self.head(h))")]), opts=("--no-stacks",))
    assert not after["evidence"]["model_calls"]["untrained"], after["evidence"]["model_calls"]
    _held("layer_in_forward", before, after, fix)


def test_layers_registered_with_a_module_list_as_the_fix_says_train(tmp_path: Path):
    """Hidden layers in a plain list (tests/scripts/real_code/plain_list_layers.py): the fix
    registers them with nn.ModuleList where the list is assigned; applied so, no layer is left out
    of the model, and the step, whose optimizer now updates them too, is timed (the fix says it can
    end slower; measured when written: 3 epochs 4.45 s before, 4.59 s after; 0.58x and 0.71x a step
    in two runs of 2026-11-30, the optimizer's per-tensor loop updating six more tensors, 1.0x in a
    third: held to 0.5x)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "plain_list_layers.py"
    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    fix = next(f for f in before["findings"] if f["category"] == "untrained-layer")["fixes"][0]
    assert "nn.ModuleList" in fix["text"] and "slower" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        self.hidden = [nn.Linear(256, 256) for _ in range(3)]\n",
        "        self.hidden = nn.ModuleList([nn.Linear(256, 256) for _ in range(3)])\n")]),
        opts=("--no-stacks",))
    assert not after["evidence"]["model_calls"]["untrained"], after["evidence"]["model_calls"]
    assert not any(f["category"] == "untrained-layer" for f in after["findings"])
    _held("plain_list_layers", before, after, fix, floor=0.5)


def test_an_encoder_called_once_on_the_batch_as_the_fix_says_is_faster(tmp_path: Path):
    """A set classifier's forward encodes each set of the batch in a Python loop (tests/scripts/
    real_code/set_encoder.py): the first fix is one call on the whole batch, self.enc(x), each set's
    .mean(0) becoming .mean(1); applied so, the step must be faster (a try; measured when written:
    11.8 ms -> 1.6 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "set_encoder.py"
    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert "self.enc(x)" in fix["text"] and ".mean(1)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        feats = []\n        for i in range(x.size(0)):\n"
        "            feats.append(self.enc(x[i]).mean(0))\n"
        "        return self.head(torch.stack(feats))\n",
        "        return self.head(self.enc(x).mean(1))\n")]), opts=("--no-stacks",))
    assert not after["evidence"]["model_calls"]["per_sample_inner"], after["evidence"]["model_calls"]
    _held("set_encoder", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 3.0, (before["steps"], after["steps"])


def test_an_accuracy_counted_on_the_whole_batch_as_the_fix_says_is_faster(tmp_path: Path):
    """An accuracy summed each step by comparing predictions and labels element by element
    (tests/scripts/real_code/zip_accuracy.py): the first fix for the loop's <genexpr> says it is
    added up every step and offers (pred == y).sum().item(); applied, the step must be faster (a
    try; measured when written: 1.4 ms -> 0.8 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "zip_accuracy.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "50"))
    [f] = [f for f in before["findings"] if f["category"] == "loop-overhead"]
    fix = f["fixes"][0]
    assert "adds its result up at every step" in fix["text"], fix
    assert "(pred == y).sum().item()" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "correct += sum(1 for p, t in zip(pred, y) if p == t)", "correct += (pred == y).sum().item()")]),
        opts=("--no-stacks",))
    _held("zip_accuracy", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.2, (before["steps"], after["steps"])


def _length_buckets_applied(tmp_path: Path, name: str, at_least: float) -> None:
    """A script padding each batch to its own longest sample from a shuffled loader, run, its first
    fix (draw each batch from samples of similar length) applied as a batch_sampler over length
    buckets, run again: the training must be `at_least` times faster."""
    script = ROOT / "tests" / "scripts" / "real_code" / f"{name}.py"
    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert "sort the indices by length" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "loader = DataLoader(Sequences(), batch_size=32, shuffle=True, collate_fn=collate)\n",
        "order = sorted(range(len(data)), key=lambda i: len(data[i][0]))\n"
        "buckets = [order[i:i + 32] for i in range(0, len(order), 32)]\n\n\n"
        "class Buckets(torch.utils.data.Sampler):\n"
        "    def __iter__(self):\n"
        "        random.shuffle(buckets)\n"
        "        return iter(list(buckets))\n\n"
        "    def __len__(self):\n"
        "        return len(buckets)\n\n\n"
        "loader = DataLoader(Sequences(), batch_sampler=Buckets(), collate_fn=collate)\n")]),
        opts=("--no-stacks",))
    _held(name, before, after, fix)
    trained = [sum(e["seconds"] for e in r["account"] if e["phase"] == "train") for r in (before, after)]
    assert trained[0] / trained[1] >= at_least, trained


def test_a_transformer_over_batches_of_similar_lengths_trains_faster(tmp_path: Path):
    """A 2-layer transformer over sequences of 20-200 tokens padded per batch
    (tests/scripts/real_code/padded_transformer.py, 48% padding: under the 50% a fixed length is
    told from, over the 30% a batch padded to its own longest is): from length buckets the
    training must be at least 1.5x faster (attention's cost grows with the square of the length)."""
    _length_buckets_applied(tmp_path, "padded_transformer", 1.5)


def test_sequences_padded_per_batch_as_the_fix_says_are_faster(tmp_path: Path):
    """Reviews of 10-64 tokens padded to 256 in __getitem__ (tests/scripts/real_code/
    padded_reviews.py): the first fix pads each batch to its longest sample in a collate_fn;
    applied as it says, the step must be faster (a try; the text quotes 13.8 s -> 2.5 s an epoch)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "padded_reviews.py"
    before = _run(tmp_path, "before", script, "--texts", "1600", opts=("--no-stacks",))
    # (an LSTM's backward through the padding turns subnormal: where this CPU is slow on them the
    # flush leads, 8.65 s -> 3.06 s a run by hand; the padding fix comes next)
    fix = next(x for x in before["findings"][0]["fixes"] if "set_flush_denormal" not in x["text"])
    assert fix["text"].startswith("each batch is padded to 256 positions"), fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        ids = ids + [0] * (MAX_LEN - len(ids))\n", ""),
        ("loader = DataLoader(Reviews(), batch_size=32, shuffle=True)",
         "loader = DataLoader(Reviews(), batch_size=32, shuffle=True, collate_fn=lambda b: (\n"
         "    nn.utils.rnn.pad_sequence([s[0] for s in b], batch_first=True, padding_value=0),\n"
         "    torch.tensor([s[1] for s in b])))")]), "--texts", "1600", opts=("--no-stacks",))
    # (padded to its own longest sample now, 10-64 tokens in a batch: length buckets may be said
    # next, never the fixed length again)
    assert not any(x["text"].startswith("each batch is padded to 256")
                   for f in after["findings"] for x in f["fixes"])
    _held("padded_reviews", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 2.0, (before["steps"], after["steps"])


def test_an_ema_walking_the_tensors_in_python_is_done_in_one_foreach_call(tmp_path: Path):
    """ModelEma.update walks both state_dicts in Python (timm's ModelEmaV2 form): named
    loop-overhead with its kind, the try is torch._foreach_lerp_ over lists of the tensors built
    once (the same average); applied as the fix says, the step must be faster."""
    script = ROOT / "tests" / "scripts" / "real_code" / "ema_loop.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    [f] = [f for f in before["findings"] if f["category"] == "loop-overhead"]
    fix = f["fixes"][0]
    assert "torch._foreach_lerp_" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):\n"
        "            ema_v.copy_(self.decay * ema_v + (1.0 - self.decay) * model_v)\n",
        "        if not hasattr(self, 'lists'):  # built once\n"
        "            self.lists = (list(self.module.state_dict().values()),\n"
        "                          list(model.state_dict().values()))\n"
        "        torch._foreach_lerp_(*self.lists, 1.0 - self.decay)\n")]),
        opts=("--stack-rate", "40"))
    _held("ema_loop", before, after, fix)


def test_of_two_zipped_loaders_the_slow_one_is_fixed(tmp_path: Path):
    """A fast in-memory loader zipped with one whose samples each take a 1 ms read: the fix was
    num_workers for the fast one (they yield as many batches, and the first won the tie). Applied at
    the slow one's line, the step must gain at least half of what the fix promised."""
    script = ROOT / "tests" / "scripts" / "real_code" / "zipped_loaders.py"
    before = _run(tmp_path, "before", script)
    fix = _fix_with(before, "num_workers")
    assert fix["where"].endswith(f"zipped_loaders.py:{line_of(script, 'unlabelled = DataLoader')}"), fix
    old, new = fix["change"]["num_workers"]
    assert old == 1 and new > 1 and fix["expected_step_s"] is not None, fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [("num_workers=1)", f"num_workers={new})")]))
    _held("zipped loaders", before, after, fix)


def test_a_model_called_once_per_sample_is_batched(tmp_path: Path):
    """32 calls of one row a step: the fix is one call on the batch (the loss averaged over it, the
    same as the loop's mean of per-sample losses); applied by editing the loop, it must be faster."""
    script = ROOT / "tests" / "scripts" / "real_code" / "per_sample_loop.py"
    before = _run(tmp_path, "before", script, "--epochs", "1", opts=("--no-stacks",))
    [fix] = [x for f in before["findings"] for x in f["fixes"]
             if x["text"].startswith("call Sequential once")]
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "            loss = torch.zeros(())\n"
        "            for i in range(len(xb)):\n"
        "                out = model(xb[i].unsqueeze(0))\n"
        "                loss = loss + torch.nn.functional.cross_entropy(out, yb[i].unsqueeze(0))\n"
        "            loss = loss / len(xb)\n",
        "            loss = torch.nn.functional.cross_entropy(model(xb), yb)\n")]), "--epochs", "1",
        opts=("--no-stacks",))
    assert after["evidence"]["model_calls"]["calls"] == 1
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    RESULTS.append(("per_sample_loop", "one batched call", None, measured))
    # (each step also fetches its 32 rows one by one through the DataLoader, which the fix leaves
    # as it is: 3.9 -> 1.4 ms a step here on 2026-12-03, 2.8x, where it read 9.4x when written)
    assert measured >= 2.5, (before["steps"]["mean_s"], after["steps"]["mean_s"], fix)


def test_subnormal_optimizer_state_is_flushed_and_the_steps_keep_their_pace(tmp_path: Path):
    """Adam's first moment of dead ReLU units decays into subnormal values and the CPU's steps
    slow down (subnormal-math): the try is torch.set_flush_denormal(True) right after `import
    torch`. Applied there, no look finds a subnormal value and the mean step must be faster (1.47x
    measured when written with it at the optimizer's line, 2000 steps)."""
    from cpu_traits import SUBNORMAL_SLOW, subnormal_penalty

    if subnormal_penalty() < SUBNORMAL_SLOW:
        pytest.skip(f"this CPU computes subnormal floats at {subnormal_penalty():.2f}x the normal "
                    "time: no steps slow, no finding, nothing to apply (the e2e test checks that)")
    script = ROOT / "tests" / "scripts" / "real_code" / "dead_units.py"
    before = _run(tmp_path, "before", script, "--steps", "2000")
    [f] = [f for f in before["findings"] if f["category"] == "subnormal-math"]
    [fix] = f["fixes"]
    line = line_of(script, "import torch", whole=True)
    assert "torch.set_flush_denormal(True)" in fix["text"] and fix["where"].endswith(f":{line}"), fix
    edited = _copy(script, tmp_path, [("\nimport torch\n",
                                       "\nimport torch\n\ntorch.set_flush_denormal(True)\n")])
    after = _run(tmp_path, "after", edited, "--steps", "2000")
    assert not any(x["subnormal"] for x in after["evidence"]["subnormals"])
    assert not any(f["category"] == "subnormal-math" for f in after["findings"])
    _held("dead_units", before, after, fix)


def test_subnormal_weights_are_flushed_and_inference_runs_at_full_speed(tmp_path: Path):
    """An inference model whose weights are 0.13% subnormal: subnormal-math says it from the weights'
    share, without a number; applied (the flush right after `import torch`) the mean batch must be
    faster (3.87x measured when written with torch's threads; 4.8x on one: 9.6 -> 2.0 ms)."""
    from cpu_traits import SUBNORMAL_SLOW, subnormal_penalty

    if subnormal_penalty() < SUBNORMAL_SLOW:
        pytest.skip(f"this CPU computes subnormal floats at {subnormal_penalty():.2f}x the normal "
                    "time: nothing to gain, no finding (the e2e test checks that)")
    script = ROOT / "tests" / "scripts" / "real_code" / "subnormal_weights.py"
    before = _run(tmp_path, "before", script)
    [f] = [f for f in before["findings"] if f["category"] == "subnormal-math"]
    [fix] = f["fixes"]
    edited = _copy(script, tmp_path, [("\nimport torch\n",
                                       "\nimport torch\n\ntorch.set_flush_denormal(True)\n")])
    after = _run(tmp_path, "after", edited)
    assert not any(f["category"] == "subnormal-math" for f in after["findings"])
    _held("subnormal_weights", before, after, fix)


def test_blocks_called_directly_as_the_checkpointing_fix_says_take_the_step_it_predicts(tmp_path: Path):
    """A config that checkpoints every block of a model whose activations fit (tests/scripts/
    real_code/checkpointed_blocks.py): the first fix is calling the blocks directly at the
    checkpoint(...) line, with the step that would take (the checkpointed forwards' share taken
    off); applied so, the step must be faster by at least half the predicted gain (measured when
    written: 42.7 -> 33.4 ms a step, 1.28x predicted, 1.28-1.29x measured)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "checkpointed_blocks.py"
    before = _run(tmp_path, "before", script, "--steps", "120", opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert fix["text"].startswith("activation checkpointing is on") and fix["expected_step_s"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("                x = checkpoint(blk, x, use_reentrant=False)\n", "                x = blk(x)\n")]),
        "--steps", "120", opts=("--no-stacks",))
    assert after["evidence"].get("recompute") is None, after["evidence"].get("recompute")
    _held("checkpointed_blocks", before, after, fix)


def test_an_l2_penalty_given_to_adam_as_the_fix_says_is_faster(tmp_path: Path):
    """An L2 penalty summed over the parameters tensor by tensor into the loss (tests/scripts/
    real_code/l2_by_hand.py): the first fix is Adam's weight_decay=2 * lam in place of the
    penalty, the same training; applied so, the step must be faster (a try; measured when written:
    7.0 -> 5.9 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "l2_by_hand.py"
    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    # (compute-bound's first fix; where this host runs the step in 6 ms, not 7, the TensorDataset's
    # per-sample fetch is 17-18% of it and preprocessing-bound leads, in either of two runs)
    [f] = [f for f in before["findings"] if f["category"] == "compute-bound"]
    fix = f["fixes"][0]
    assert "Adam(..., weight_decay=2 * lam)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        l2 = sum(p.pow(2.0).sum() for p in model.parameters())\n"
         "        loss = loss + lam * l2\n", ""),
        ("torch.optim.Adam(model.parameters(), lr=1e-3)",
         "torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=2 * lam)")]),
        opts=("--no-stacks",))
    assert after["evidence"]["model_calls"]["penalty"] is None, after["evidence"]["model_calls"]
    _held("l2_by_hand", before, after, fix)


def _growth(report: dict[str, Any]) -> float:
    return float(report["evidence"]["memory"]["growth_bytes_per_s"] or 0.0)


def test_a_fragmenting_heap_is_stopped_by_the_allocators_the_fixes_name(tmp_path: Path):
    """A DQN keeping a 16 KB frame a step while each step's float batches are freed
    (tests/scripts/real_code/replay_frames.py): glibc's heap grows by about a step's batches each
    step, nearly all of it free. The first fix is an allocator that gives freed memory back
    (LD_PRELOAD, the one on this machine), the second MALLOC_MMAP_THRESHOLD_=131072 (said as
    possibly slower). Applied so (each in the environment, as the fixes say), the growth must drop
    to what the buffer keeps, a fifth of it at most; the preloaded allocator's steps must not be
    slower beyond noise (measured when written: peak 1.92 -> 0.36 GiB, steps 9.0 -> 9.5 ms), the
    mmap threshold's are timed and shown (measured when written, plain python: 21.7 -> 29.8 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "replay_frames.py"
    before = _run(tmp_path, "before", script, opts=("--no-stacks",))
    heap = before["evidence"]["memory"]["heap"]
    if heap is None:
        pytest.skip("this C library has no mallinfo2: malloc's heap cannot be read")
    [oom] = [f for f in before["findings"] if f["category"] == "oom-risk"]
    assert "most of it memory malloc keeps" in oom["summary"], oom["summary"]
    preload, mmap = oom["fixes"][0], oom["fixes"][1]
    assert "MALLOC_MMAP_THRESHOLD_=131072" in mmap["text"] and "slower" in mmap["text"], mmap
    grown = _growth(before)
    after = _run(tmp_path, "mmap", script, opts=("--no-stacks",), env={"MALLOC_MMAP_THRESHOLD_": "131072"})
    assert _growth(after) <= grown / 5, (grown, _growth(after))
    assert not any(f["category"] == "oom-risk" for f in after["findings"])
    RESULTS.append(("replay_frames", "MALLOC_MMAP_THRESHOLD_=131072", None,
                    before["steps"]["mean_s"] / after["steps"]["mean_s"]))
    if not heap["preloads"]:
        assert "apt install libjemalloc2" in preload["text"], preload
        pytest.skip("no jemalloc or tcmalloc on this machine: the fix says to install one")
    lib = heap["preloads"][0]
    assert f"LD_PRELOAD={lib}" in preload["text"], preload
    after = _run(tmp_path, "preload", script, opts=("--no-stacks",), env={"LD_PRELOAD": lib})
    assert _growth(after) <= grown / 5, (grown, _growth(after))
    assert after["evidence"]["memory"]["heap"] is None  # glibc's malloc no longer serves the script
    RESULTS.append(("replay_frames", f"LD_PRELOAD={lib}"[:30], None,
                    before["steps"]["mean_s"] / after["steps"]["mean_s"]))
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] > 0.85, (before["steps"], after["steps"])


def test_a_running_sums_graphs_pinning_a_fragmenting_heap_are_fixed_first_and_stopped(tmp_path: Path):
    """Each micro-batch's loss summed with its graph into a running total a list keeps
    (tests/scripts/fixes/graph_pins_heap.py): the heap grows mostly free, and the first fix is the
    sum's line (loss.item()), before the allocators. Applied as it says, the growth must stop (a
    tenth of it at most) and the steps must not be slower; the second allocator fix, applied too,
    must do no better on either (measured when written, plain python: 556 MiB/min as written, 38
    MiB/min at 64 ms a step with MALLOC_MMAP_THRESHOLD_=131072, none at 42 ms with loss.item())."""
    script = FIXES / "graph_pins_heap.py"
    before = _run(tmp_path, "before", script, "--seconds", "35", opts=("--no-stacks",))
    [oom] = [f for f in before["findings"] if f["category"] == "oom-risk"]
    fix = oom["fixes"][0]
    line = next(i for i, t in enumerate(script.read_text().splitlines(), 1)
                if t.strip() == "running = running + loss")
    assert fix["text"].startswith("running adds tensors that carry their autograd graph"), oom["fixes"]
    assert fix["where"].endswith(f"graph_pins_heap.py:{line}"), fix
    allocators = [f for f in oom["fixes"] if "MALLOC_MMAP_THRESHOLD_=131072" in f["text"]]
    grown = _growth(before)
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("running = running + loss\n", "running = running + loss.item()\n")]),
        "--seconds", "35", opts=("--no-stacks",))
    assert _growth(after) <= grown / 10, (grown, _growth(after))
    assert not any(f["category"] == "oom-risk" for f in after["findings"])
    speed = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    RESULTS.append(("graph_pins_heap", "loss.item()", None, speed))
    assert speed > 0.9, (before["steps"], after["steps"])
    if allocators:  # (a heap this C library cannot read says no allocator fix)
        mmap = _run(tmp_path, "mmap", script, "--seconds", "35", opts=("--no-stacks",),
                    env={"MALLOC_MMAP_THRESHOLD_": "131072"})
        RESULTS.append(("graph_pins_heap", "MALLOC_MMAP_THRESHOLD_=131072", None,
                        before["steps"]["mean_s"] / mmap["steps"]["mean_s"]))
        assert _growth(after) <= max(_growth(mmap), 1 << 20), (_growth(after), _growth(mmap))
        assert after["steps"]["mean_s"] <= mmap["steps"]["mean_s"] * 1.05, (after["steps"], mmap["steps"])


def test_a_collates_per_sample_tokenizing_done_once_as_the_fix_says_is_faster(tmp_path: Path):
    """A collate_fn tokenizing each text of the batch every epoch (tests/scripts/fixes/text_collate.py):
    the first fix names its loop over the samples and says to do that work once per sample, in the
    dataset's __init__, collate only putting the batch together. Applied so, the steps must be at
    least 1.5x faster and the whole run no slower (a try; measured when written: 6.1 -> ~2 ms a
    step, the run 4.2 -> 3.4 s)."""
    script = FIXES / "text_collate.py"
    before = _run(tmp_path, "before", script, "--epochs", "3", opts=("--stack-rate", "40"))
    loop = next(i for i, t in enumerate(script.read_text().splitlines(), 1)
                if t.strip() == "for text, label in batch:")
    fix = next(f for x in before["findings"] for f in x["fixes"]
               if "Its loop over the batch's samples" in f["text"])
    assert f"text_collate.py:{loop}: `for text, label in batch:`" in fix["text"], fix
    assert "in Texts.__init__" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("class Texts(Dataset):\n    def __len__(self):",
         "class Texts(Dataset):\n    def __init__(self):\n"
         "        self.ids = [torch.tensor([VOCAB.get(tok, 0)\n"
         "                                  for tok in re.findall(r\"\\w+\", text.lower())])\n"
         "                    for text in TEXTS]\n\n    def __len__(self):"),
        ("        return TEXTS[i], LABELS[i]", "        return self.ids[i], LABELS[i]"),
        ("    ids, offsets, labels = [], [], []\n    for text, label in batch:\n"
         "        offsets.append(len(ids))\n        for tok in re.findall(r\"\\w+\", text.lower()):\n"
         "            ids.append(VOCAB.get(tok, 0))\n        labels.append(label)\n"
         "    return torch.tensor(ids), torch.tensor(offsets), torch.tensor(labels)",
         "    ids = [x for x, _ in batch]\n"
         "    offsets = torch.tensor([0] + [len(x) for x in ids[:-1]]).cumsum(0)\n"
         "    return torch.cat(ids), offsets, torch.tensor([y for _, y in batch])")]),
        "--epochs", "3", opts=("--no-stacks",))
    _held("text_collate", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])
    took = before["source"]["duration_s"], after["source"]["duration_s"]
    assert took[1] <= took[0] * 1.05, took


def test_values_computed_from_the_index_one_element_at_a_time_as_one_op_are_faster(tmp_path: Path):
    """A dataset writing each of a sample's values from its index in a Python loop
    (tests/scripts/fixes/index_values.py, one of two zipped loaders): the first fix names the write
    and says one op over torch.arange; applied so, the step must be at least 3x faster (a try;
    measured when written: 262 us -> 4.4 us a sample)."""
    script = FIXES / "index_values.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    line = next(i for i, t in enumerate(script.read_text().splitlines(), 1)
                if t.strip() == "v[k] = math.sin(i + k)")
    assert "torch.sin(i + torch.arange(n))" in fix["text"], fix
    assert fix["where"].endswith(f"index_values.py:{line}"), fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        v = torch.empty(128)\n        for k in range(128):\n            v[k] = math.sin(i + k)\n"
        "        return v\n",
        "        return torch.sin(i + torch.arange(128.0))\n")]), opts=("--no-stacks",))
    _held("index_values", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 3.0, (before["steps"], after["steps"])


def test_numpys_pools_in_the_workers_at_one_thread_as_the_fix_says_make_batches_faster(tmp_path: Path):
    """numpy's matmuls in each of two workers' samples (tests/scripts/fixes/blas_workers.py): the
    first fix is one BLAS thread a worker, OPENBLAS_NUM_THREADS=1 where the job starts; applied so,
    the step must be faster (a try; measured when written: 2.2-2.4x for the whole run)."""
    script = FIXES / "blas_workers.py"
    before = _run(tmp_path, "before", script, "--steps", "60", opts=("--no-stacks",))
    fix = before["findings"][0]["fixes"][0]
    assert "OPENBLAS_NUM_THREADS=1" in fix["text"], fix
    after = _run(tmp_path, "after", script, "--steps", "60", opts=("--no-stacks",),
                 env={"OPENBLAS_NUM_THREADS": "1"})
    _held("blas_workers", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_a_custom_backward_as_one_masked_op_as_the_fix_says_is_faster(tmp_path: Path):
    """A custom autograd Function's backward row by row (tests/scripts/real_code/custom_backward.py):
    the first fix names its loop and says ops over the whole tensor; applied so, the step must be
    at least 2x faster (a try; measured when written: 3.3 ms -> 0.9 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "custom_backward.py"
    before = _run(tmp_path, "before", script, "--steps", "800", opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "a torch.autograd.Function's backward written in Python" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        out = torch.empty_like(g)\n"
        "        for i in range(x.shape[0]):\n"
        "            mask = (x[i] > -1) & (x[i] < 1)\n"
        "            out[i] = g[i] * mask * 1.5\n"
        "        return out\n",
        "        return g * ((x > -1) & (x < 1)) * 1.5\n")]), "--steps", "800", opts=("--no-stacks",))
    _held("custom_backward", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 2.0, (before["steps"], after["steps"])


def test_a_forwards_row_loop_as_one_scatter_as_the_fix_says_is_faster(tmp_path: Path):
    """A graph layer summing its edges' messages edge by edge in its forward
    (tests/scripts/real_code/edge_messages.py): the first fix names the loop and says one op for
    all rows (index_add_); applied so, the step must be at least 3x faster (a try; measured when
    written: 16 steps in 5.2 s -> ~0.3 s, the same loss)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "edge_messages.py"
    before = _run(tmp_path, "before", script, "--epochs", "12")
    fix = before["findings"][0]["fixes"][0]
    assert "out.index_add_(0, dst, rows)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("edges = torch.randint(0, N, (E, 2)).tolist()\n", "edges = torch.randint(0, N, (E, 2)).t()\n"),
        ("        out = torch.zeros_like(msg)\n        for s, d in edges:\n"
         "            out[d] = out[d] + msg[s]\n",
         "        src, dst = edges\n        out = torch.zeros_like(msg).index_add_(0, dst, msg[src])\n")]),
        "--epochs", "60", opts=("--no-stacks",))
    _held("edge_messages", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 3.0, (before["steps"], after["steps"])


def test_a_loss_over_all_pairs_at_once_as_the_fix_says_is_faster(tmp_path: Path):
    """A contrastive loss filling its similarity matrix pair by pair
    (tests/scripts/real_code/pair_similarity_loop.py): the first fix names the loop, says all pairs
    in one op (zn @ zn.T) and the loop's share with the backward of what it recorded; applied so,
    the step must be faster by at least half of what that share promises (a try; measured when
    written: 120 steps in 5.5 s -> ~0.2 s, the same loss)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "pair_similarity_loop.py"
    before = _run(tmp_path, "before", script, "--steps", "80", opts=("--stack-rate", "40"))
    f = before["findings"][0]
    fix = f["fixes"][0]
    assert "zn @ zn.T" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    B = z.shape[0]\n    sim = torch.zeros(B, B)\n    for i in range(B):\n"
         "        for j in range(B):\n"
         "            sim[i, j] = F.cosine_similarity(z[i], z[j], dim=0) / temp\n",
         "    zn = F.normalize(z, dim=1)\n    sim = zn @ zn.T / temp\n")]),
        "--steps", "800", opts=("--no-stacks",))
    _held("pair_similarity_loop", before, after, fix)
    promised = 1 / max(0.05, 1 - f["share"])  # the step without the loop and its backward
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= 1 + (promised - 1) / 2, (f["share"], measured)


def test_a_loss_over_all_classes_in_one_call_as_the_fix_says_is_faster(tmp_path: Path):
    """A weighted loss summed a class at a time (tests/scripts/real_code/class_weighted_loop.py):
    the first fix names the class loop, says one call over all columns (pos_weight a tensor) and the
    loop's share with the backward it recorded; applied so, the step must be faster by at least
    half of what that share promises (a try; measured when written: 200 steps 2.2 s -> ~0.3 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "class_weighted_loop.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    f = before["findings"][0]
    fix = f["fixes"][0]
    assert "pos_weight=w" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    loss = 0.0\n    for c in range(C):\n        loss = loss + F.binary_cross_entropy_with_logits("
         "logits[:, c], y[:, c], pos_weight=pos_weight[c])\n    loss = loss / C\n",
         "    loss = F.binary_cross_entropy_with_logits(logits, y, pos_weight=pos_weight)\n")]),
        "--steps", "800", opts=("--no-stacks",))
    _held("class_weighted_loop", before, after, fix)
    promised = 1 / max(0.05, 1 - f["share"])  # the step without the loop and its backward
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= 1 + (promised - 1) / 2, (f["share"], measured)


def test_data_made_without_requires_grad_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """An in-memory dataset made with requires_grad=True (tests/scripts/real_code/
    data_requires_grad.py): the first fix names the data's gradient and says to make the data
    without requires_grad; applied so, the step must be at least 5x faster (a try; measured when
    written: the script 11.3 s -> 2.3 s, the steps ~28 ms -> ~1 ms)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "data_requires_grad.py"
    before = _run(tmp_path, "before", script, "--steps", "150")
    # The first fix of the steps' finding; start-up may lead where fresh memory is slow to fault
    # in (a VM giving freed pages back to its host: making the 100-MB data took 4.6 s, 2026-12-03).
    fix = next(f["fixes"][0] for f in before["findings"] if f["fixes"] and f["category"] != "startup-bound")
    assert "without requires_grad" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("X = torch.tensor(data, requires_grad=True)\n", "X = torch.tensor(data)\n")]),
        "--steps", "600", opts=("--no-stacks",))
    _held("data_requires_grad", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 5.0, (before["steps"], after["steps"])


def test_a_users_items_as_sets_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """A negative redrawn while it is in the user's list of items (tests/scripts/real_code/
    neg_samples.py): the first fix names the list search and a set made once; applied so, the step
    must be faster (a try; measured when written: the script 6.5 s -> 4.7 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "neg_samples.py"
    before = _run(tmp_path, "before", script)
    fix = before["findings"][0]["fixes"][0]
    assert "searching a Python list" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        while neg in seen[u]:\n", "        while neg in seen_sets[u]:\n"),
        ("pairs = [(u, i)", "seen_sets = {u: set(v) for u, v in seen.items()}\npairs = [(u, i)")]),
        opts=("--no-stacks",))
    _held("neg_samples", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_a_mask_made_by_one_op_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A causal mask filled entry by entry in the forward (tests/scripts/real_code/
    causal_mask_loop.py): the first fix names the fill, its share, and torch.triu; applied so, the
    step must gain at least a third of what that share promises (a try; measured when written:
    1.47x a step, 100 steps 7.7 s -> 5.9 s plain)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "causal_mask_loop.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    f = before["findings"][0]
    fix = f["fixes"][0]
    assert "torch.triu" in fix["text"], fix
    share = next(x["value"] for x in f["evidence"] if x.get("name") == "forward_fill_share")
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        mask = torch.zeros(T, T)\n        for i in range(T):\n"
         "            for j in range(i + 1, T):\n                mask[i, j] = float(\"-inf\")\n",
         "        mask = torch.triu(torch.full((T, T), float(\"-inf\")), diagonal=1)\n")]),
        "--steps", "120", opts=("--no-stacks",))
    _held("causal_mask_loop", before, after, fix)
    # (a third, not half: the samples put 45% in the fill where timing it gave ~30%, 6.1 s of
    # training -> 4.3 s plain; py-spy waiting for a core reads the serial Python more often than
    # the math on both cores)
    promised = 1 / (1 - share)
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= 1 + (promised - 1) / 3, (share, measured)


def test_a_bank_encoded_every_50_steps_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """Negatives mined from 20,000 rows encoded under no_grad every step
    (tests/scripts/real_code/bank_every_step.py): the first fix names the call, its rows and its
    share of a step, and says every N steps; applied (the bank encoded when step % 50 == 0, kept
    between), the step must be faster by at least half of what that share promises (a try; measured
    when written: the run 9.4 s -> 4.5 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "bank_every_step.py"
    before = _run(tmp_path, "before", script, "--steps", "150")
    fix = before["findings"][0]["fixes"][0]
    assert "every N steps" in fix["text"] and "20,000 rows" in fix["text"], fix
    share = float(fix["text"].split("about ")[1].split("% of a step")[0]) / 100
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("def mine_negatives(anchor_emb, anchor_labels):\n    with torch.no_grad():\n"
         "        all_emb = enc(X)\n",
         "bank = None\n\n\ndef mine_negatives(anchor_emb, anchor_labels, step):\n    global bank\n"
         "    if step % 50 == 0:\n        with torch.no_grad():\n            bank = enc(X)\n"
         "    all_emb = bank\n"),
        ("neg = mine_negatives(anchor, labels[idx])", "neg = mine_negatives(anchor, labels[idx], step)")]),
        "--steps", "150", opts=("--no-stacks",))
    _held("bank_every_step", before, after, fix)
    promised = 1 / (1 - share * (1 - 1 / 50))
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= 1 + (promised - 1) / 2, (share, promised, measured)


def test_per_sample_gradients_by_vmap_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """DP-SGD by hand (tests/scripts/real_code/per_sample_clip.py): each sample's gradients taken in
    a loop and clipped. The first fix says torch.func.vmap over torch.func.grad; applied so (the same
    clipping), the step must be at least 1.5x faster (a try; measured when written: 4.6 s -> 2.7 s
    a run)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "per_sample_clip.py"
    before = _run(tmp_path, "before", script, "--steps", "300", opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "torch.func.vmap" in fix["text"], fix
    loop = (
        "    grads = [torch.zeros_like(p) for p in model.parameters()]\n"
        "    for i in range(len(x)):\n"
        "        loss = nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1])\n"
        "        g = torch.autograd.grad(loss, list(model.parameters()))\n"
        "        norm = torch.sqrt(sum((gi ** 2).sum() for gi in g))\n"
        "        scale = min(1.0, C / (norm.item() + 1e-6))\n"
        "        for acc, gi in zip(grads, g):\n"
        "            acc += gi * scale\n")
    batched = (
        "    params = {k: v.detach() for k, v in model.named_parameters()}\n"
        "    g = torch.func.vmap(torch.func.grad(one), in_dims=(None, 0, 0))(params, x, y)\n"
        "    norms = torch.sqrt(sum((gi.reshape(len(x), -1) ** 2).sum(1) for gi in g.values()))\n"
        "    scale = (C / (norms + 1e-6)).clamp(max=1.0)\n"
        "    grads = [(g[k] * scale.view(-1, *[1] * (g[k].dim() - 1))).sum(0)\n"
        "             for k, _ in model.named_parameters()]\n")
    one = ("def one(params, x, y):\n"
           "    out = torch.func.functional_call(model, params, (x[None],))\n"
           "    return nn.functional.cross_entropy(out, y[None])\n\n\n")
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        (loop, batched), ("for _ in range(a.steps):\n", one + "for _ in range(a.steps):\n")]),
        "--steps", "300", opts=("--no-stacks",))
    _held("per_sample_clip", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_a_log_appended_a_line_a_step_as_the_fix_says_ends_the_run_sooner(tmp_path: Path):
    """A list of records written whole with json.dump every step
    (tests/scripts/real_code/json_every_step.py): the first fix names the line, says one JSON line
    appended a step, and predicts the run's time; applied so, the run must gain at least half of
    what it predicts (measured when written: 20.4 s -> 2.8 s, predicted 5.1 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "json_every_step.py"
    before = _run(tmp_path, "before", script, "--steps", "2000", opts=("--stack-rate", "20"))
    fix = next(x for f in before["findings"] for x in f["fixes"] if "JSON Lines" in x["text"])
    assert fix["where"].endswith("json_every_step.py:31"), fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("history = []\n", "history = []\nlog = open(path + 'l', 'w')\n"),
        ("    with open(path, \"w\") as f:\n        json.dump(history, f)\n",
         "    log.write(json.dumps(history[-1]) + '\\n')\n")]), "--steps", "2000", opts=("--no-stacks",))
    measured = before["source"]["duration_s"] / after["source"]["duration_s"]
    if not fix.get("expected_run_s"):  # (the line said as the loop's own work: a try)
        RESULTS.append(("json_every_step", "a line a step", None, measured))
        assert measured > 1.0, measured
        return
    predicted = before["source"]["duration_s"] / fix["expected_run_s"]
    RESULTS.append(("json_every_step", "a line a step", predicted, measured))
    assert measured >= 1 + (predicted - 1) / 2, (predicted, measured)


def test_a_per_value_apply_written_as_tensor_ops_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """Tensor.apply_ of a Python function over each sample's 256 values
    (tests/scripts/real_code/apply_per_value.py): the first fix says ops over the whole tensor;
    applied (s.clamp(-1, 1) * 0.5), the step must be at least 1.5x faster (a try; measured when
    written: 4.6-4.9 ms -> 0.5-0.8 ms a batch in the dataset)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "apply_per_value.py"
    before = _run(tmp_path, "before", script, "--epochs", "2", opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "once for every value" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        s = self.x[i].clone()\n        s.apply_(clip_and_scale)\n",
        "        s = self.x[i].clamp(-1, 1) * 0.5\n")]), "--epochs", "2", opts=("--no-stacks",))
    _held("apply_per_value", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_generating_the_prompts_as_one_batch_as_the_fix_says_makes_the_run_faster(tmp_path: Path):
    """A hand-written generate() with no training step (tests/scripts/real_code/generate_tokens.py):
    the first fix names the sequence the loop grows and says a key/value cache and the prompts as
    one batch; the batch applied (no cache: nn.TransformerEncoder has none), the run must end at
    least 2 s sooner (measured when written: 24 prompts of 48 new tokens 0.90-1.12 s -> 0.42-0.47 s;
    here 64 prompts of 96, plain python: 8.6 s -> 4.7 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "generate_tokens.py"
    args = ("--prompts", "64", "--new", "96")
    before = _run(tmp_path, "before", script, *args, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "key/value cache" in fix["text"] and "as one batch" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "    for _i in range(args.prompts):\n"
        "        seq = torch.randint(0, 1000, (1, 16))\n"
        "        for _t in range(args.new):\n"
        "            logits = model(seq)\n"
        "            nxt = logits[:, -1].argmax(-1, keepdim=True)\n"
        "            seq = torch.cat([seq, nxt], dim=1)\n"
        "        outs.append(seq)\n",
        "    seq = torch.randint(0, 1000, (args.prompts, 16))\n"
        "    for _t in range(args.new):\n"
        "        logits = model(seq)\n"
        "        nxt = logits[:, -1].argmax(-1, keepdim=True)\n"
        "        seq = torch.cat([seq, nxt], dim=1)\n"
        "    outs.extend(seq)\n")]), *args, opts=("--no-stacks",))
    was, now = before["source"]["duration_s"], after["source"]["duration_s"]
    RESULTS.append(("generate_tokens", "prompts as one batch", None, was / now))
    assert was - now >= 2.0, (was, now)


def test_activation_hooks_on_some_steps_only_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """A forward hook on every layer taking numpy statistics at every step
    (tests/scripts/real_code/activation_hooks.py): the first fix says to do its work on some steps
    only; applied as it says (the hook returns at once except every 10th step), the step must be
    at least 1.5x faster (a try; measured when written: 8.0-8.9 ms -> ~4.4 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "activation_hooks.py"
    before = _run(tmp_path, "before", script, "--steps", "600", opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "a forward hook" in fix["text"] and "some steps only" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "    def hook(module, inputs, output):\n",
        "    def hook(module, inputs, output):\n        if step % 10:\n            return\n")]),
        "--steps", "600", opts=("--no-stacks",))
    _held("activation_hooks", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.5, (before["steps"], after["steps"])


def test_a_vocabulary_looked_up_in_a_dict_as_the_fix_says_makes_batches_faster(tmp_path: Path):
    """`vocab.index(w) if w in vocab` for each word (tests/scripts/real_code/vocab_index.py): the
    first fix says a dict made once; applied so, the step must be at least 5x faster (a try;
    measured when written: 130 ms -> 0.5 ms a batch of 64 in the lookups alone)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "vocab_index.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "searching a Python list" in fix["text"] and "enumerate(xs)}" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ('vocab = ["<pad>", "<unk>"] + WORDS\n',
         'vocab = ["<pad>", "<unk>"] + WORDS\nword_ids = {w: i for i, w in enumerate(vocab)}\n'),
        ("        ids = [vocab.index(w) if w in vocab else 1 for w in t.split()]\n",
         "        ids = [word_ids.get(w, 1) for w in t.split()]\n")]), opts=("--no-stacks",))
    _held("vocab_index", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 5.0, (before["steps"], after["steps"])


def test_a_samplers_draws_shuffled_once_as_the_fix_says_make_the_epochs_start_at_once(tmp_path: Path):
    """random.choice then list.remove over each class's indices, the epoch's order built whole in
    the sampler's __iter__ (tests/scripts/real_code/sampler_remove.py): the fix says shuffle once;
    applied so, the mean step (each epoch's first batch's wait in it) must be at least 3x faster (a
    try; measured when written: 60,000 indices 3.9 s an epoch -> 23 ms)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "sampler_remove.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "random.shuffle" in fix["text"] and "at each epoch's start" in before["findings"][0]["summary"]
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        while pos and neg:\n"
        "            p = random.choice(pos)\n"
        "            pos.remove(p)\n"
        "            n = random.choice(neg)\n"
        "            neg.remove(n)\n"
        "            order += [p, n]\n",
        "        random.shuffle(pos)\n"
        "        random.shuffle(neg)\n"
        "        for p, n in zip(pos, neg):\n"
        "            order += [p, n]\n")]), opts=("--no-stacks",))
    _held("sampler_remove", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 3.0, (before["steps"], after["steps"])


def test_a_replay_buffer_as_a_ring_as_the_fix_says_keeps_the_steps_at_their_first_pace(tmp_path: Path):
    """list.pop(0) on a full replay buffer (tests/scripts/real_code/replay_list.py): the fix says a
    ring buffer and predicts the run at the first steps' pace; applied so, the steps must hold half
    the predicted gain (measured when written: 12.6 s -> 8.4 s at 200,000 entries)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "replay_list.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    # (the steps' rise said with the line's part of it, or, where a faster host left the rise unseen,
    # the line said as the loop's own work, leading or beside compute-bound: a try without a number)
    fix = next((x for f in before["findings"] for x in f["fixes"] if "ring buffer" in x["text"]), None)
    assert fix is not None, [f["summary"] for f in before["findings"]]
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("buffer = []\n", "buffer = []\nhead = 0\n"),
        ("        buffer.append((state, random.randrange(4), random.random(), nxt))\n"
         "        if len(buffer) > args.capacity:\n"
         "            buffer.pop(0)\n",
         "        item = (state, random.randrange(4), random.random(), nxt)\n"
         "        if len(buffer) < args.capacity:\n"
         "            buffer.append(item)\n"
         "        else:\n"
         "            buffer[head] = item\n"
         "            head = (head + 1) % args.capacity\n")]), opts=("--no-stacks",))
    measured = before["source"]["duration_s"] / after["source"]["duration_s"]
    if not fix.get("expected_run_s"):
        RESULTS.append(("replay_list", "a ring buffer", None, measured))
        assert measured > 1.0, measured
        return
    predicted = before["source"]["duration_s"] / fix["expected_run_s"]
    RESULTS.append(("replay_list", "a ring buffer", predicted, measured))
    assert measured >= 1 + (predicted - 1) / 2, (predicted, measured)


def test_attention_without_its_weights_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """nn.MultiheadAttention's weights computed and dropped (tests/scripts/real_code/attention_block.py):
    the first fix says need_weights=False; applied so, the step must be at least 1.1x faster (a try;
    measured when written: 17.1 s -> 13.4 s for 60 steps at 8 x 512 tokens)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "attention_block.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "need_weights=False" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "a, _ = self.attn(h, h, h)", "a, _ = self.attn(h, h, h, need_weights=False)")]),
                 opts=("--no-stacks",))
    _held("attention_block", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.1, (before["steps"], after["steps"])


def test_batches_of_similar_lengths_as_the_fix_says_make_the_run_faster(tmp_path: Path):
    """Sequences of 5-300 tokens padded per batch from a shuffled loader
    (tests/scripts/real_code/padded_per_batch.py): the first fix says to draw each batch from
    samples of similar length; applied as a batch_sampler over length buckets, the training must
    be at least 1.3x faster (measured when written: 4.1-4.7 s an epoch, 2.4 s)."""
    _length_buckets_applied(tmp_path, "padded_per_batch", 1.3)


def test_attention_by_scaled_dot_product_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """Attention written by hand (tests/scripts/real_code/hand_attention.py): the first fix says
    scaled_dot_product_attention with is_causal=True; applied so, the step must be at least 1.1x
    faster (a try; measured when written: 20 steps in 14.3 s -> 11.5 s)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "hand_attention.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "scaled_dot_product_attention" in fix["text"] and "is_causal=True" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [(
        "        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
        "        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float(\"-inf\"))\n"
        "        att = F.softmax(att, dim=-1)\n"
        "        y = att @ v\n",
        "        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n")]), opts=("--no-stacks",))
    _held("hand_attention", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.1, (before["steps"], after["steps"])


def test_batch_indices_from_one_shuffle_an_epoch_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """np.random.choice(N, 256, replace=False) each step (tests/scripts/real_code/choice_indices.py):
    the fix says one shuffle an epoch, sliced per step; applied so, the step must be at least 5x
    faster (measured when written: 12 ms a call, 0.002 ms a slice)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "choice_indices.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "perm[i * k:(i + 1) * k]" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("for _step in range(args.steps):\n    idx = np.random.choice(N, 256, replace=False)\n",
         "perm = torch.randperm(N)\nfor _step in range(args.steps):\n"
         "    i = _step % (N // 256)\n    idx = perm[i * 256:(i + 1) * 256]\n")]), opts=("--no-stacks",))
    _held("choice_indices", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 5.0, (before["steps"], after["steps"])


def test_the_top_rows_by_topk_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """np.argsort(scores)[-256:] each step (tests/scripts/real_code/hard_rows.py): the fix says
    torch.topk; applied so, the step must gain at least half of what the line's share of it says
    (measured when written: 24 ms -> 0.9 ms a call over 400,000 scores; 2026-12-02: 1.5-1.7x a step
    where the line held 48%)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "hard_rows.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    # (the line beside it, `scores = feats @ ...`, holds a quarter of the samples: which leads moves
    # with py-spy's samples, 48% against 24% one run)
    fix = next(x for f in before["findings"] for x in f["fixes"] if "torch.topk(x, k)" in x["text"])
    share = float(fix["text"].split(" takes ")[1].split("% of each")[0]) / 100
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    hard = np.argsort(scores)[-256:]\n",
         "    hard = torch.topk(torch.from_numpy(scores), 256).indices.numpy()\n")]), opts=("--no-stacks",))
    _held("hard_rows", before, after, fix)
    # At least half of what removing the line's share would gain (topk's own time left out): a host
    # whose argsort takes 5 ms of an 11-ms step (48%) gains ~1.9x at most, where 24 ms gave 2x+.
    bound = 1 + (1 / (1 - share) - 1) / 2
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= bound, (share, bound, measured)


def test_a_conv_net_in_channels_last_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A small CNN on NCHW batches (tests/scripts/real_code/conv_net.py): the faster math offers
    channels_last first; applied to the model and each batch, the step must be faster (a try;
    measured when written: 80-85 ms -> 57-70 ms a step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "conv_net.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = next(x for f in before["findings"] for x in f["fixes"] if "channels_last" in x["text"])
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("opt = torch.optim.SGD(",
         "model = model.to(memory_format=torch.channels_last)\nopt = torch.optim.SGD("),
        ("        loss = F.cross_entropy(model(x), y)\n",
         "        x = x.to(memory_format=torch.channels_last)\n"
         "        loss = F.cross_entropy(model(x), y)\n")]),
        opts=("--no-stacks",))
    _held("conv_net", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 1.05, (before["steps"], after["steps"])


def test_a_folder_listed_once_in_init_as_the_fix_says_makes_batches_faster(tmp_path: Path):
    """`sorted(os.listdir(self.root))` for every sample (tests/scripts/real_code/listdir_samples.py):
    the fix says once in __init__; applied so, the step must be at least 3x faster (measured when
    written: 117 ms a batch of 64 over 4,000 files)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "listdir_samples.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "the same result for every sample" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.n = len(os.listdir(root))\n",
         "        self.n = len(os.listdir(root))\n        self.files = sorted(os.listdir(self.root))\n"),
        ("        files = sorted(os.listdir(self.root))\n", "        files = self.files\n")]),
        opts=("--no-stacks",))
    _held("listdir_samples", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 3.0, (before["steps"], after["steps"])


def test_samples_made_once_in_init_as_the_fix_says_make_the_run_faster(tmp_path: Path):
    """Reviews tokenized with a regex in __getitem__, nothing random (tests/scripts/real_code/
    regex_reviews.py): the fix says to make every sample once in __init__ and only index after, at
    the cost of that work up front (one epoch gains nothing). Applied so over 3 epochs, the steps
    must be faster and the whole run too (a try; measured when written: 9.9 -> 7.3 s a run)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "regex_reviews.py"
    before = _run(tmp_path, "before", script)
    fix = next(x for f in before["findings"] for x in f["fixes"] if "It draws nothing at random" in x["text"])
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.texts, self.labels, self.max_len = texts, labels, max_len\n",
         "        self.texts, self.labels, self.max_len = texts, labels, max_len\n"
         "        self.x = torch.stack([self._make(i) for i in range(len(texts))])\n"
         "        self.y = torch.tensor(labels)\n"),
        ("    def __getitem__(self, i):\n        toks",
         "    def __getitem__(self, i):\n        return self.x[i], self.y[i]\n\n"
         "    def _make(self, i):\n        toks"),
        ("        return torch.tensor(ids), self.labels[i]\n", "        return torch.tensor(ids)\n")]),
        opts=("--no-stacks",))
    _held("regex_reviews", before, after, fix)
    whole = before["source"]["duration_s"] / after["source"]["duration_s"]
    RESULTS.append(("regex_reviews (whole run)", "samples made in __init__", None, whole))
    assert whole > 1.1, (before["source"]["duration_s"], after["source"]["duration_s"])


def test_subnormals_in_a_grus_backward_flushed_as_the_fix_says_are_faster(tmp_path: Path):
    """A GRU over 200 time steps (tests/scripts/real_code/gru_long_sequences.py): 14% of its
    backward's values subnormal, each step ~0.9 s; the fix is torch.set_flush_denormal(True)
    after `import torch`, a try (measured when written: the run 24.8 s -> 4.0 s, 25 steps).
    Applied so, the steps must be at least twice as fast; not said on a CPU that computes on them
    at full speed (the probe times it: then nothing to apply)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "gru_long_sequences.py"
    before = _run(tmp_path, "before", script, "--steps", "12", opts=("--no-stacks",))
    looks = [x for x in before["evidence"]["subnormals"] if x["backward"]]
    assert looks, before["evidence"]["subnormals"]
    if looks[0]["penalty"] is not None and looks[0]["penalty"] < th.SUBNORMAL_PENALTY_MIN:
        pytest.skip(f"this CPU computes on subnormal values at {looks[0]['penalty']}x: nothing to gain")
    f = next(x for x in before["findings"] if x["category"] == "subnormal-math")
    fix = f["fixes"][0]
    assert "torch.set_flush_denormal(True)" in fix["text"] and fix["where"].endswith(":7"), fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("import torch\n", "import torch\ntorch.set_flush_denormal(True)\n")]), "--steps", "12",
        opts=("--no-stacks",))
    assert not any(x["category"] == "subnormal-math" for x in after["findings"])
    _held("gru_long_sequences", before, after, fix)
    assert before["steps"]["mean_s"] / after["steps"]["mean_s"] >= 2.0, (before["steps"], after["steps"])


def _embedding_share(f: dict[str, Any]) -> float:
    return float(next(x["value"] for x in f["evidence"] if x.get("name") == "forward_fill_share"))


def test_a_timestep_embedding_made_on_whole_ranges_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A sinusoidal timestep embedding made by math.sin and math.cos a value at a time
    (tests/scripts/real_code/timestep_embedding.py): the first fix names the loop, its share, and
    torch.sin/cos on whole ranges interleaved; applied so (the same values), the step must gain at
    least a third of what that share promises (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "timestep_embedding.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    f = before["findings"][0]
    fix = f["fixes"][0]
    assert "torch.sin" in fix["text"] and "flatten(1)" in fix["text"], fix
    share = _embedding_share(f)
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    rows = []\n    for ti in t.tolist():\n        row = []\n        for i in range(dim // 2):\n"
         "            freq = math.exp(-math.log(10000) * i / (dim // 2))\n"
         "            row.append(math.sin(ti * freq))\n            row.append(math.cos(ti * freq))\n"
         "        rows.append(row)\n    return torch.tensor(rows)\n",
         "    half = dim // 2\n"
         "    args = t[:, None] * torch.exp(-math.log(10000) * torch.arange(half) / half)\n"
         "    return torch.stack([args.sin(), args.cos()], -1).flatten(1)\n")]),
        opts=("--no-stacks",))
    _held("timestep_embedding", before, after, fix)
    promised = 1 / (1 - share)
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= 1 + (promised - 1) / 3, (share, measured)


def test_a_mask_made_by_one_comparison_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A causal mask made from a nested comprehension of comparisons at every call
    (tests/scripts/real_code/mask_comprehension.py): applied as the first fix says, one comparison
    of two aranges (the same mask), the step must gain at least a third of what its share
    promises (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "mask_comprehension.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    f = before["findings"][0]
    fix = f["fixes"][0]
    assert "torch.arange(T)[None, :] > torch.arange(T)[:, None]" in fix["text"], fix
    share = _embedding_share(f)
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("torch.tensor([[j > i for j in range(t)] for i in range(t)])",
         "torch.arange(t)[None, :] > torch.arange(t)[:, None]")]), opts=("--no-stacks",))
    _held("mask_comprehension", before, after, fix)
    promised = 1 / (1 - share)
    measured = before["steps"]["mean_s"] / after["steps"]["mean_s"]
    assert measured >= 1 + (promised - 1) / 3, (share, measured)


def test_a_replay_buffer_kept_in_a_list_as_a_ring_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A DQN's replay buffer drawn from a deque by random.sample (tests/scripts/real_code/
    deque_replay.py): applied as the first fix says, a list used as a ring (the same capacity,
    the same draws), the step must be faster (a try; measured when written: 64 draws from 150,000,
    541 -> 57 us of a ~1.3-ms step)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "deque_replay.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "indexing a collections.deque" in fix["text"] and "ring" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("buffer = deque(maxlen=400_000)\n",
         "buffer, CAP, pos = [], 400_000, 0\n\n\ndef push(t):\n    global pos\n"
         "    if len(buffer) < CAP:\n        buffer.append(t)\n    else:\n        buffer[pos] = t\n"
         "    pos = (pos + 1) % CAP\n\n\n"),
        ("    buffer.append((state, random.randrange", "    push((state, random.randrange"),
        ("    buffer.append((state, act,", "    push((state, act,")]), opts=("--no-stacks",))
    _held("deque_replay", before, after, fix)


def test_a_confusion_matrix_counted_by_bincount_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A confusion matrix counted a prediction at a time (tests/scripts/real_code/
    confusion_counts.py): applied as the first fix says, one torch.bincount a step (the same
    matrix: the script prints its accuracy), the step must be faster (a try; measured when
    written: the run 8.1 s -> 3.6 s at 3,000 steps)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "confusion_counts.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "torch.bincount" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    for t, p in zip(y, pred):\n        cm[t, p] += 1\n",
         "    cm += torch.bincount(y * C + pred, minlength=C * C).view(C, C)\n")]), opts=("--no-stacks",))
    _held("confusion_counts", before, after, fix)


def test_a_ranking_loss_over_all_pairs_at_once_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A margin ranking loss summed pair by pair (tests/scripts/real_code/pairwise_ranking.py):
    applied as the first fix says, every pair's difference at once with a mask of the pairs kept
    (the same loss), the step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "pairwise_ranking.py"
    before = _run(tmp_path, "before", script, opts=("--stack-rate", "40"))
    fix = before["findings"][0]["fixes"][0]
    assert "s[:, None] - s[None, :]" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    loss = torch.zeros(())\n    for i, j in itertools.combinations(range(DOCS), 2):\n"
         "        if rel[q, i] == rel[q, j]:\n            continue\n"
         "        sign = 1.0 if rel[q, i] > rel[q, j] else -1.0\n"
         "        loss = loss + torch.relu(1.0 - sign * (s[i] - s[j]))\n",
         "    sign = torch.sign(rel[q][:, None] - rel[q][None, :])\n"
         "    keep = torch.triu(sign != 0, diagonal=1)\n"
         "    loss = torch.relu(1.0 - sign * (s[:, None] - s[None, :]))[keep].sum()\n")]),
        opts=("--no-stacks",))
    _held("pairwise_ranking", before, after, fix)


def test_a_gans_generator_output_detached_in_ds_loss_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A GAN's discriminator loss on G's output undetached (tests/scripts/real_code/gan_no_detach.py):
    applied as the fix says, fake.detach() in D's loss and no retain_graph (the same updates), the
    step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "gan_no_detach.py"
    before = _run(tmp_path, "before", script, "--steps", "120")
    [fix] = [x for f in before["findings"] if f["category"] == "discarded-gradients" for x in f["fixes"]]
    assert "`fake.detach()`" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("bce(D(fake), torch.zeros(64, 1))", "bce(D(fake.detach()), torch.zeros(64, 1))"),
        ("d_loss.backward(retain_graph=True)", "d_loss.backward()")]), "--steps", "120",
        opts=("--no-stacks",))
    _held("gan_no_detach", before, after, fix)


def test_an_embedding_lookup_by_f_embedding_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """Token embeddings by a one-hot matrix product (tests/scripts/real_code/onehot_lookup.py):
    applied as the first fix says, F.embedding(ids, W) (the same rows and gradient), the step
    must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "onehot_lookup.py"
    before = _run(tmp_path, "before", script, "--steps", "60")
    fix = before["findings"][0]["fixes"][0]
    assert "F.embedding(ids, W)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        onehot = F.one_hot(ids, VOCAB).float()  # (B, L, V)\n"
         "        vecs = onehot @ self.emb  # (B, L, D)\n",
         "        vecs = F.embedding(ids, self.emb)  # (B, L, D)\n")]), "--steps", "60",
        opts=("--no-stacks",))
    _held("onehot_lookup", before, after, fix)


def test_a_spectrogram_on_all_windows_at_once_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A log-spectrogram framed by hand in __getitem__ (tests/scripts/real_code/audio_frames.py):
    applied as the fix says, all windows at once as a view and one rfft over its rows (the same
    values), the step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "audio_frames.py"
    before = _run(tmp_path, "before", script, "--epochs", "1", opts=("--stack-rate", "40"))
    # (the first finding but start-up, which may lead where fresh memory is slow to fault in: the
    # clips' making took 4.1 s on a VM giving freed pages back to its host, 2026-12-03)
    steps = [f for f in before["findings"] if f["category"] != "startup-bound"][:1]
    [fix] = [x for f in steps for x in f["fixes"] if "sliding_window_view" in x["text"]]
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        frames = []\n        for start in range(0, len(wav) - N_FFT + 1, HOP):\n"
         "            frame = wav[start:start + N_FFT] * self.window\n"
         "            frames.append(np.abs(np.fft.rfft(frame)) ** 2)\n"
         "        return np.log(np.stack(frames, axis=1) + 1e-6)\n",
         "        frames = np.lib.stride_tricks.sliding_window_view(wav, N_FFT)[::HOP] * self.window\n"
         "        return np.log(np.abs(np.fft.rfft(frames, axis=-1)).T ** 2 + 1e-6)\n")]),
        "--epochs", "1", opts=("--no-stacks",))
    _held("audio_frames", before, after, fix)


def test_a_positive_drawn_from_indices_by_class_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A siamese dataset scanning every label for each sample's positive
    (tests/scripts/real_code/siamese_pairs.py): applied as the first fix says, the indices by class
    made once and a positive drawn from its class (again while it is the sample itself), the step
    must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "siamese_pairs.py"
    before = _run(tmp_path, "before", script)
    fix = before["findings"][0]["fixes"][0]
    assert "self.by_class" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.labels = torch.randint(0, classes, (n,), generator=g).tolist()\n",
         "        self.labels = torch.randint(0, classes, (n,), generator=g).tolist()\n"
         "        self.by_class = {}\n"
         "        for j, c in enumerate(self.labels):\n"
         "            self.by_class.setdefault(c, []).append(j)\n"),
        ("        same = [j for j in range(len(self.labels)) if self.labels[j] == y and j != i]\n"
         "        j = random.choice(same)\n",
         "        j = i\n        while j == i:\n            j = random.choice(self.by_class[y])\n")]),
        opts=("--no-stacks",))
    _held("siamese_pairs", before, after, fix)


def test_a_list_of_per_channel_convs_as_one_grouped_conv_as_the_fix_says_makes_the_step_faster(
        tmp_path: Path):
    """A depthwise convolution as 64 Conv1d(1, 1, 7) (tests/scripts/real_code/depthwise_list.py):
    applied as the first fix says, one Conv1d(64, 64, 7, groups=64) (the same outputs), the step
    must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "depthwise_list.py"
    before = _run(tmp_path, "before", script, "--steps", "120")
    fix = before["findings"][0]["fixes"][0]
    assert "groups=64" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.convs = nn.ModuleList(nn.Conv1d(1, 1, k, padding=k // 2) for _ in range(channels))\n",
         "        self.conv = nn.Conv1d(channels, channels, k, padding=k // 2, groups=channels)\n"),
        ("        return torch.cat([conv(x[:, c:c + 1]) for c, conv in enumerate(self.convs)], dim=1)\n",
         "        return self.conv(x)\n")]), "--steps", "120", opts=("--no-stacks",))
    _held("depthwise_list", before, after, fix)


def test_heads_as_one_wider_linear_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """32 Linear(256, 4) heads called through the list's index on the same features
    (tests/scripts/real_code/heads_subscript.py): applied as the first fix says, one
    Linear(256, 128) whose output is split into 4 columns each (the same math), the step must be
    faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "heads_subscript.py"
    before = _run(tmp_path, "before", script, "--steps", "1500")
    fix = before["findings"][0]["fixes"][0]
    assert "one Linear(256, 128)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.heads = nn.ModuleList([nn.Linear(256, 4) for _ in range(tasks)])\n",
         "        self.heads = nn.Linear(256, 4 * tasks)\n"),
        ("        return [self.heads[i](h) for i in range(len(self.heads))]\n",
         "        return self.heads(h).split(4, dim=-1)\n")]), "--steps", "1500", opts=("--no-stacks",))
    _held("heads_subscript", before, after, fix)


def test_one_loss_over_the_whole_output_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A tagger's loss added up one time step at a time (tests/scripts/real_code/
    loss_per_timestep.py): applied as the first fix says, one cross-entropy over
    logits.reshape(-1, V) (the same loss: each step's was a mean over the batch), the step must be
    faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "loss_per_timestep.py"
    before = _run(tmp_path, "before", script, "--steps", "20")
    fix = before["findings"][0]["fixes"][0]
    assert "crit(logits.reshape(-1, 2000), y.reshape(-1))" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("    loss = 0\n    for i in range(T):\n        loss = loss + crit(logits[:, i, :], y[:, i])\n"
         "    loss = loss / T\n",
         "    loss = crit(logits.reshape(-1, V), y.reshape(-1))\n")]), "--steps", "20", opts=("--no-stacks",))
    _held("loss_per_timestep", before, after, fix)


def test_one_loss_in_the_loss_modules_forward_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A loss module whose forward adds up a cross-entropy per time step (tests/scripts/real_code/
    loss_module_loop.py): applied as the first fix says, in SequenceLoss.forward, one
    self.ce(logits.reshape(-1, 3000), targets.reshape(-1)) (the same loss: each step's was a mean
    over the batch), the step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "loss_module_loop.py"
    before = _run(tmp_path, "before", script, "--steps", "20")
    fix = before["findings"][0]["fixes"][0]
    assert "self.ce(logits.reshape(-1, 3000), targets.reshape(-1))" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        total = 0.0\n        for t in range(logits.size(1)):\n"
         "            total = total + self.ce(logits[:, t], targets[:, t])\n"
         "        return total / logits.size(1)\n",
         "        return self.ce(logits.reshape(-1, V), targets.reshape(-1))\n")]),
        "--steps", "20", opts=("--no-stacks",))
    _held("loss_module_loop", before, after, fix)


def test_a_conversion_made_once_before_the_loop_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """The whole array converted at every step to take a batch (tests/scripts/real_code/
    invariant_tensor.py): applied as the first fix says, converted once before the loop and indexed
    there (the same batches), the step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "invariant_tensor.py"
    before = _run(tmp_path, "before", script, "--steps", "120")
    fix = before["findings"][0]["fixes"][0]
    assert "X_t = torch.FloatTensor(X_train)" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("bs = 256\n", "bs = 256\nX_t, y_t = torch.FloatTensor(X_train), torch.LongTensor(y_train)\n"),
        ("    xb = torch.FloatTensor(X_train)[i:i + bs]\n    yb = torch.LongTensor(y_train)[i:i + bs]\n",
         "    xb = X_t[i:i + bs]\n    yb = y_t[i:i + bs]\n")]), "--steps", "120", opts=("--no-stacks",))
    _held("invariant_tensor", before, after, fix)


def test_an_adjacency_made_sparse_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A GCN's adjacency passed dense (tests/scripts/real_code/dense_adjacency.py): applied as the
    first fix says, to_sparse_csr() once before the loop (the same losses), the step must be
    faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "dense_adjacency.py"
    before = _run(tmp_path, "before", script, "--epochs", "30")
    fix = before["findings"][0]["fixes"][0]
    assert "A_hat.to_sparse_csr()" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("X = torch.randn(N, F_IN)\n", "X = torch.randn(N, F_IN)\nA_hat = A_hat.to_sparse_csr()\n")]),
        "--epochs", "30", opts=("--no-stacks",))
    _held("dense_adjacency", before, after, fix)


def test_an_ensemble_run_as_one_vmapped_call_as_the_fix_says_makes_the_step_faster(tmp_path: Path):
    """A deep ensemble's members called in turn (tests/scripts/real_code/ensemble_members.py):
    applied as the first fix says, their parameters stacked (torch.func.stack_module_state, the
    optimizer holding those) and one vmapped functional_call, the step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "ensemble_members.py"
    before = _run(tmp_path, "before", script, "--steps", "600")
    fix = before["findings"][0]["fixes"][0]
    assert "stack_module_state" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("opt = torch.optim.Adam(members.parameters(), lr=1e-3)\n",
         "import copy\nfrom torch.func import functional_call, stack_module_state\n"
         "params, buffers = stack_module_state(list(members))\n"
         "base = copy.deepcopy(members[0]).to('meta')\n"
         "run = torch.vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))\n"
         "opt = torch.optim.Adam(params.values(), lr=1e-3)\n"),
        ("    preds = torch.stack([m(x) for m in members])\n", "    preds = run(params, buffers, x)\n")]),
        "--steps", "600", opts=("--no-stacks",))
    _held("ensemble_members", before, after, fix)


def test_lookups_by_embedding_bag_as_the_fix_says_make_the_step_faster(tmp_path: Path):
    """An embedding averaged one sample at a time (tests/scripts/real_code/embedding_per_sample.py):
    applied as the first fix says, nn.EmbeddingBag(mode='mean') on all ids with their offsets (the
    same values), the step must be faster (a try)."""
    script = ROOT / "tests" / "scripts" / "real_code" / "embedding_per_sample.py"
    before = _run(tmp_path, "before", script, "--steps", "40")
    fix = before["findings"][0]["fixes"][0]
    assert "nn.EmbeddingBag" in fix["text"], fix
    after = _run(tmp_path, "after", _copy(script, tmp_path, [
        ("        self.emb = nn.Embedding(VOCAB, 64)\n",
         "        self.emb = nn.EmbeddingBag(VOCAB, 64, mode='mean')\n"),
        ("        vecs = torch.stack([self.emb(torch.tensor(ids)).mean(0) for ids in batch_ids])\n",
         "        flat = torch.tensor([t for ids in batch_ids for t in ids])\n"
         "        offsets = torch.tensor([0] + [len(ids) for ids in batch_ids[:-1]]).cumsum(0)\n"
         "        vecs = self.emb(flat, offsets)\n")]), "--steps", "40", opts=("--no-stacks",))
    _held("embedding_per_sample", before, after, fix)
