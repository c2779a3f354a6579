"""Golden terminal output: reports built from factory evidence, rendered at 80 columns, compared
with the files in tests/golden/ (as memray's reporter tests do). A change to the wording shows up
as a diff to review; after reviewing it, refresh the files with

    GPUBOTTLE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from factories import evidence

from gpubottle.evidence import (
    CopyEvidence,
    GpuEvidence,
    LeakEvidence,
    MemoryEvidence,
    StackEvidence,
    StackFrameShare,
)
from gpubottle.render.terminal import render_terminal
from gpubottle.rules import diagnose

GOLDEN = Path(__file__).resolve().parent / "golden"


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


CASES = {
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
