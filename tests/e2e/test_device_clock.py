"""The device's own clock, on a fake device that runs asynchronously as a real one does
(tests/support/fake_cuda.py: kernels queue and run in real time while the host goes on; syncs wait
for the backlog). Four shapes where the host's clock misleads, each held against what the device
itself did (the fake's truth): the step time within 10% and the verdict the device says."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from conftest import SCRIPTS, cores_taken, machine_loaded, profiled_run

from gpubottle import vocabulary as v

SHAPES = SCRIPTS / "async_gpu"



def _in_the_loop(own: dict) -> float:
    """gpubottle's line less its start (before the script's first line) and its probes' install at
    `import torch` (where the stacks, under load, can catch its import watcher for tens of ms): its
    cost in the loop."""
    before = ("its start (before the script's first line)",
              "its probes' install (at `import torch`) and import watcher")
    return own["seconds"] - sum(own["parts"].get(k, 0.0) for k in before)

def _run(tmp_path: Path, name: str, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A shape run live: the fake device's probes and clock through the real CLI."""
    truth = tmp_path / "truth.json"
    proc, rep = profiled_run(tmp_path, SHAPES / f"{name}.py", *args, opts=("--no-status",),
                             env={"FAKE_TRUTH": str(truth)})
    assert proc.returncode == 0 and rep is not None, proc.stderr[-3000:]
    return rep, json.loads(truth.read_text())


def _replayed(replayed_run: Any, tmp_path: Path, name: str, *args: str
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A shape's recorded run (tests/runs/) diagnosed again, with the device's truth it recorded
    beside it: the clock and the rules from the raw files (the live path: the test above)."""
    work = tmp_path / "work"
    work.mkdir()
    proc, rep = replayed_run(SHAPES / f"{name}.py", *args, opts=("--no-status",),
                             env={"FAKE_TRUTH": "truth.json"}, cwd=work, kept=("truth.json",))
    assert proc.returncode == 0 and rep is not None, proc.stderr[-3000:]
    return rep, json.loads((work / "truth.json").read_text())


def _kept(rep: dict[str, Any], truth: dict[str, Any], first: int = 1) -> list[int]:
    """The steps gpubottle measures the steady loop on (from `first`): not warm-up, not instrumented,
    not outliers (those are said as pauses, on their own)."""
    st = rep["evidence"]["steps"]
    skip = set(st["instrumented"]) | set(st["outliers"])
    return [i for i in range(max(first, st["warmup"]), len(st["durations_s"]))
            if i not in skip and i - 1 < len(truth["step_s"])]


def _steps_agree(rep: dict[str, Any], truth: dict[str, Any]) -> None:
    """gpubottle's step times against the device's own, step by step over the measured steps (the
    truth's list starts at the second step: its index i is gpubottle's i + 1)."""
    keep = _kept(rep, truth)
    got = [rep["steps"]["durations_s"][i] for i in keep]
    want = [truth["step_s"][i - 1] for i in keep]
    errors = sorted(abs(g - w) / w for g, w in zip(got, want))
    median_error = errors[len(errors) // 2]
    assert len(keep) >= 20 and median_error <= 0.1, (median_error, got[:10], want[:10])
    assert abs(statistics.mean(got) - statistics.mean(want)) <= 0.1 * statistics.mean(want)
    assert abs(rep["steps"]["median_s"] - statistics.median(want)) <= 0.1 * statistics.median(want)


def _why(rep: dict[str, Any]) -> str:
    return json.dumps({"primary": rep["primary"], "findings": [(f["category"], f["severity"], f["summary"])
                                                             for f in rep["findings"]],
                       "notes": rep["notes"], "steps": {k: rep["steps"][k] for k in ("median_s", "mean_s")}},
                      indent=1)


# Two slots: its host must stay ahead of 10 ms of device work a step, and beside three of the
# suite's runs and two busy programs on 2 cores it fell behind (the training 2.7 s for 1.5 on the
# device, the probes' own steps 0.063 s); beside two, as with three slots, it never did.
@pytest.mark.two_slots
def test_a_host_ahead_with_rare_syncs_is_timed_by_the_device(tmp_path: Path):
    # 1 ms of host work queues 10 ms of GPU work; every 50th step's .item() drains the backlog. On
    # the host's clock the median step was 1 ms and the draining step a pause.
    # The first three steps add 150 ms of device time each (cudnn.benchmark's trials, handles):
    # warm-up, on the device's clock (the first step's, with no event before it, on the host's),
    # said in start-up and not in the training, nor as gpubottle's (its probes run in them).
    rep, truth = _run(tmp_path, "host_ahead", "--steps", "150", "--warmup-ms", "150")
    _steps_agree(rep, truth)
    assert rep["primary"] == v.COMPUTE_BOUND, _why(rep)
    cb = next(f for f in rep["findings"] if f["category"] == v.COMPUTE_BOUND)
    assert cb["summary"].startswith("the GPU sets the pace"), _why(rep)
    assert rep["steps"]["pauses"] == 0
    # The account says the training was the GPU's work, and where the host waited for it.
    train = next(e for e in rep["account"] if e["phase"] == "train")
    assert "GPU work" in train["parts"] and "the host ran" in train["part_sites"]["GPU work"], train
    start = next(e for e in rep["account"] if e["phase"] == "startup")
    # (0.45 s of device time; the first step's on the host's clock, which a loaded hour stretches:
    # 0.545 s in a fresh-check beside nothing else on a slow host)
    assert 0.38 <= start["parts"].get("the first steps' warm-up", 0.0) <= 0.6, start
    own = next(e for e in rep["account"] if e["phase"] == "gpubottle")
    # (a warm-up step charged to the probes would be 0.15 s; the probed steps' own cost beside two
    # busy programs and the suite's four runs was 0.063 s, quiet under 0.05)
    assert _in_the_loop(own) < (0.1 if machine_loaded(rep) else 0.05), own
    assert abs(sum(train["parts"].values()) - train["seconds"]) <= 0.02 * train["seconds"], train
    # 150 steps of 10 ms on the device, the warm-up left out of them (the last drained in tear-down).
    assert train["seconds"] <= 1.5 * 1.2, (train, start)


@pytest.mark.parametrize("name", ["logging_item"])
def test_a_logging_helpers_item_on_a_gpu_bound_loop_is_not_the_loops_cost(replayed_run: Any, tmp_path: Path,
                                                                         name: str):
    # The helper's .item() is where the host waits for the GPU: its stack samples land there.
    rep, truth = _replayed(replayed_run, tmp_path, name, "--steps", "150")
    _steps_agree(rep, truth)
    assert rep["primary"] == v.COMPUTE_BOUND, _why(rep)
    assert not any(f["category"] == v.LOOP_OVERHEAD for f in rep["findings"]), _why(rep)


def test_data_time_near_gpu_time_is_said_and_predicted_on_the_device(replayed_run: Any, tmp_path: Path):
    # 10 ms of batch-making, 2 ms of launches, 9 ms of GPU work, no sync: the host waits 83% of its
    # step but the GPU idles a third of it, and workers can bring the step to the GPU's 9 ms.
    rep, truth = _replayed(replayed_run, tmp_path, "data_near_gpu", "--steps", "120")
    _steps_agree(rep, truth)
    keep = _kept(rep, truth, first=10)
    idle = sum(truth["idle_s"][i - 1] for i in keep) / sum(truth["step_s"][i - 1] for i in keep)
    share = rep["steps"]["input_wait_share"]
    assert abs(share - idle) <= 0.1, (share, idle)
    f = rep["findings"][0]
    assert f["summary"].startswith("the GPU waits for data"), _why(rep)
    train = next(e for e in rep["account"] if e["phase"] == "train")
    assert "GPU work" not in train["parts"], train  # the GPU waits: the host is not ahead of it
    # Beside other programs (the suite's own runs too) the batch-making has no core to spare:
    # workers would queue. (Once in a quiet suite: 0.47 of a core seen outside, 1.0 by the total.)
    if rep["primary"] == v.PREPROCESSING_BOUND and (machine_loaded(rep) or cores_taken(rep) >= 0.5):
        return
    assert rep["primary"] == v.DATA_STARVED, _why(rep)
    fix = next(x for x in f["fixes"] if "num_workers" in x["change"])
    promised = (rep["steps"]["mean_s"] / fix["expected_step_s"] if fix.get("expected_step_s")
                else float(re.search(r"up to ([0-9.]+)x", fix["text"]).group(1)))  # a "try"
    bound = statistics.mean(truth["step_s"][10:]) / 0.009  # no faster than the GPU's own 9 ms
    assert 1.1 <= promised <= 1.1 * bound, (promised, bound, fix)


def test_a_dataset_that_reads_gpu_memory_in_getitem_is_not_a_slow_loader(replayed_run: Any, tmp_path: Path):
    # int() of a GPU tensor in __getitem__: the fetch absorbs the GPU's backlog while it works.
    rep, truth = _replayed(replayed_run, tmp_path, "gpu_resident", "--steps", "100")
    _steps_agree(rep, truth)
    # Quiet, the GPU idles a few percent of each step (the batch made after the drain): compute-bound.
    # Beside other programs that host work slows and the idle grows: past a warning's share it is
    # the reads' cost, said as such. The verdict follows the device's own idle time over the steps
    # the steady loop is measured on: a step a busy machine stalled (with most of the idle, under
    # load) is an outlier, said as a pause, not the loop's share.
    keep = _kept(rep, truth, first=10)
    idle = sum(truth["idle_s"][i - 1] for i in keep) / sum(truth["step_s"][i - 1] for i in keep)
    seen = (idle, rep["steps"]["input_wait_share"], _why(rep))
    if idle < 0.12:
        assert rep["primary"] == v.COMPUTE_BOUND, seen
    elif idle > 0.18:
        assert rep["primary"] == v.DATA_STARVED, seen
    starved = [f for f in rep["findings"] if f["category"] in (v.DATA_STARVED, v.PREPROCESSING_BOUND)]
    for f in starved:  # if the reads cost enough to be said, they are named, with no worker fix
        assert "reads GPU memory sample by sample" in f["summary"] and "gpu_resident.py:" in f["summary"]
        assert not any("num_workers" in x["change"] for x in f["fixes"]), f


def test_an_evaluation_is_not_charged_for_the_trainings_queued_work(replayed_run: Any, tmp_path: Path):
    """Issue 34.6: the host runs 9 ms a step ahead of the GPU; every 40 steps an evaluation (no
    DataLoader) reads its loss, which first waits for the training's backlog (~0.35 s). The device
    clock's mark at model.eval() says how much was still queued: the evaluation is its own 10 x
    2 ms a pass, and the backlog is training's. (On the host's clock alone: evaluation 1.8 s,
    training 0.24 s.)"""
    rep, truth = _replayed(replayed_run, tmp_path, "eval_after_backlog", "--steps", "200")
    by = {e["phase"]: e for e in rep["account"]}
    assert by["eval"]["count"] == 5 and by["eval"]["function"] == "evaluate"
    assert by["eval"]["seconds"] <= 2 * 5 * 10 * 0.002, rep["account"]  # 0.1 s of its own work
    assert by["train"]["seconds"] >= 0.75 * 200 * 0.010, rep["account"]  # 10 ms of GPU a step


def test_the_trainings_last_queued_work_is_training_not_tear_down(replayed_run: Any, tmp_path: Path):
    """Issue 34.6: the last read of the loss is 40 steps before the end, so ~0.35 s of the
    training's work is still queued when the host leaves the loop, and runs in its tear-down. On
    the device's clock it is training: 140 steps of 10 ms. A leak census the GPU idled through (on
    a loaded machine, the host fell behind the backlog while it ran) is gpubottle's, not the
    training's; the host's time in hooks and samplers, which the backlog hid, is neither."""
    rep, truth = _replayed(replayed_run, tmp_path, "host_ahead", "--steps", "140")
    by = {e["phase"]: e for e in rep["account"]}
    probes_idle = sum(truth["idle_s"][i - 1] for i in rep["evidence"]["steps"]["instrumented"]
                      if 1 <= i <= len(truth["idle_s"]))
    gpu_work = sum(truth["step_s"]) - probes_idle
    assert abs(by["train"]["seconds"] - gpu_work - 0.010) <= 0.1 * 1.4, rep["account"]
    if "GPU work" in by["train"]["parts"]:  # the host stayed ahead: its probes' time was hidden
        assert abs(_in_the_loop(by["gpubottle"]) - probes_idle) <= 0.05, rep["account"]
    else:  # only beside other programs does the host fall behind the GPU: its probes' time counts
        assert machine_loaded(rep), rep["account"]
    assert by["teardown"]["parts"]["after the last step"] < 0.1, rep["account"]
