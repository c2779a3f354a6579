"""Golden outputs: reports built from factory evidence, rendered to the terminal at 80 columns, to
the JSON contract and to HTML, compared with the files in tests/golden/ (as memray's reporter tests
do). The cases cover the verdicts, a job's rank table and the --try-fixes table. A change to the
wording or the contract shows up as a diff to review; after reviewing it, refresh the files with

    GPUBOTTLE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/render/test_golden.py
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from conftest import GOLDEN
from factories import evidence

from gpubottle.evidence import (
    CopyEvidence,
    GpuEvidence,
    LeakEvidence,
    MemoryEvidence,
    RankEvidence,
    StackEvidence,
    StackFrameShare,
    Trial,
    TrialsEvidence,
)
from gpubottle.render.html import render_html
from gpubottle.render.json_out import render_json
from gpubottle.render.terminal import render_terminal
from gpubottle.rules import diagnose


def _data_starved():
    return evidence(step_s=0.1, wait_s=0.06, wait_cpu_s=0.06, main=1.0, tree=1.0, cores=8)


def _preprocessing_bound():
    ev = evidence(step_s=0.2, wait_s=0.1, num_workers=4, per_worker=0.95, main=0.3, tree=4.0, cores=4,
                  run_queue=0.3)
    ev.stacks = StackEvidence(samples_workers=400, worker_hot=[
        StackFrameShare("colour_jitter", "data.py:26", 0.78), StackFrameShare("decode", "data.py:12", 0.1)])
    return ev


def _compute_bound():
    return evidence(step_s=0.05, main=3.9, tree=3.9, cores=4, torch_threads=4)


def _oom_risk():
    gib = 1 << 30
    series = [[float(t), float(gib + t * (40 << 20)), float(8 * gib - t * (40 << 20))] for t in range(60)]
    mem = MemoryEvidence(samples=120, total_bytes=16 * gib, limit_bytes=16 * gib, limit_source="physical",
                         peak_tree_bytes=4 * gib, peak_main_bytes=4 * gib, min_available_bytes=6 * gib,
                         peak_used_fraction=0.62, growth_bytes_per_s=40 << 20, growth_r2=0.99,
                         projected_exhaustion_s=150.0, series=series,
                         leak=LeakEvidence(label="(128, 256) float32 cpu", grown_bytes=800 << 20,
                                           grown_count=1600, steps=1600, seconds=20.0,
                                           holder="seen_batches (train.py, a module-level list)"))
    return evidence(step_s=0.01, main=1.0, tree=1.0, cores=8, memory=mem)


def _transfer_bound():
    ev = evidence(step_s=0.12, main=1.0, tree=1.0, cores=8)
    ev.gpu = GpuEvidence(
        source="profiler-window", steps=5, step_s=0.12, kernel_share=0.3, copy_share=0.55,
        breakdown={"kernel": 0.3, "memcpy": 0.55, "runtime": 0.05, "other": 0.1},
        copies=[CopyEvidence("HtoD", "pageable", 20, 0.3, 20 << 28)], idle_share=0.15,
        idle_host_share=0.1, idle_between_share=0.05, sync_share=0.0)
    ev.loaders[0].pin_memory = False
    return ev


def _inconclusive():
    return evidence(steps=3, step_s=0.1)


def _ranks():
    """Two ranks of a torchrun job: rank 1 waits for its input, rank 0 waits for rank 1."""
    ev = evidence(step_s=0.1, wait_s=0.06, wait_cpu_s=0.06, main=1.0, tree=2.0, cores=8)
    ev.ranks = [
        RankEvidence(rank=0, file="events-rank0.jsonl", steps=50, mean_step_s=0.08, input_share=0.05,
                     node="node-a", local_rank=0, pid=4101, launcher="torchrun", busy_share=0.5,
                     main_cores=0.9, workers=2, workers_cores=0.6, memory_bytes=3 << 29, exit_code=0,
                     status="completed"),
        RankEvidence(rank=1, file="events-rank1.jsonl", steps=50, mean_step_s=0.1, input_share=0.6,
                     node="node-a", local_rank=1, pid=4102, launcher="torchrun", busy_share=0.35,
                     main_cores=1.0, workers=0, memory_bytes=1 << 30, exit_code=0, status="completed"),
    ]
    ev.shown_rank = 1
    return ev


def _trials():
    """--try-fixes timed the worker fix, its neighbour and the input replayed from memory."""
    ev = _data_starved()
    base = Trial(change={}, steps=80, rounds=2, median_s=0.1, interval_s=[0.098, 0.102], mean_s=0.1,
                 mean_interval_s=[0.097, 0.103], speedup=1.0, speedup_interval=[1.0, 1.0])
    two = Trial(change={"num_workers": 2}, steps=80, rounds=2, median_s=0.041, interval_s=[0.04, 0.043],
                mean_s=0.042, mean_interval_s=[0.04, 0.044], speedup=2.38, speedup_interval=[2.2, 2.55],
                predicted_speedup=2.5)
    three = Trial(change={"num_workers": 3}, steps=80, rounds=2, median_s=0.041, interval_s=[0.039, 0.044],
                  mean_s=0.0415, mean_interval_s=[0.039, 0.045], speedup=2.41, speedup_interval=[2.2, 2.6])
    bound = Trial(change={"replay": True}, steps=80, rounds=2, median_s=0.039, interval_s=[0.038, 0.04],
                  mean_s=0.039, mean_interval_s=[0.038, 0.04], speedup=2.56, speedup_interval=[2.4, 2.7])
    ev.trials = TrialsEvidence(trials=[base, two, three], upper_bound=bound, steps_per_round=40,
                               best={"num_workers": 2})
    return ev


CASES = {
    "ranks": _ranks,
    "trials": _trials,
    "data_starved": _data_starved,
    "preprocessing_bound": _preprocessing_bound,
    "compute_bound": _compute_bound,
    "oom_risk": _oom_risk,
    "transfer_bound": _transfer_bound,
    "inconclusive": _inconclusive,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_terminal_output_matches_the_golden_file(name: str):
    out = io.StringIO()
    render_terminal(diagnose(CASES[name]()), out, width=80)
    text = out.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines()), "wider than 80 columns"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("GPUBOTTLE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}: run with GPUBOTTLE_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def _check(path: Path, text: str) -> None:
    if os.environ.get("GPUBOTTLE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}: run with GPUBOTTLE_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_contract_matches_the_golden_file(name: str):
    out = io.StringIO()
    render_json(diagnose(CASES[name]()), out)
    _check(GOLDEN / f"{name}.json", out.getvalue())


@pytest.mark.parametrize("name", ["ranks", "trials", "oom_risk"])
def test_html_matches_the_golden_file(name: str):
    out = io.StringIO()
    render_html(diagnose(CASES[name]()), out)
    _check(GOLDEN / f"{name}.html", out.getvalue())
