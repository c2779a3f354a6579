"""A verdict does not depend on the profiler's own options: 8 workers on 2 cores handing 1 MB
batches to the loop (the CPU is the limit: timed, 8, 10 and 16 workers take the same time, 2 are
slower) are preprocessing-bound with py-spy and without it, and no fix asks for more workers."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, machine_loaded

from gpubottle import vocabulary as v


@pytest.mark.exclusive
def test_busy_workers_get_the_same_verdict_with_and_without_stacks(run_profiled):
    verdicts, loaded = [], []
    for opts in ((), ("--no-stacks",)):
        proc, report = run_profiled(SCRIPTS / "fixes" / "busy_workers.py", "--batches", "300", opts=opts)
        assert proc.returncode == 0, proc.stderr
        verdicts.append((report["primary"], report["findings"][0]["summary"]))
        loaded.append(machine_loaded(report))
        more = [x for f in report["findings"] for x in f["fixes"]
                if x["change"].get("num_workers", [0, 0])[1] > 8]
        # Beside other programs' runs the idle workers can read as blocked on reads and get a
        # worker fix (an open defect: where the workers block is not measured yet).
        assert not more or machine_loaded(report), more
    assert verdicts[0][0] == verdicts[1][0], verdicts
    # Alone, the CPU is the limit (timed). Beside other programs' load (the suite's own parallel
    # runs, or a busy machine) the workers can read as blocked and the verdict as data-starved,
    # with and without stacks alike: the property here is that py-spy does not decide it.
    if not any(loaded):
        assert verdicts[0][0] == v.PREPROCESSING_BOUND, verdicts


def test_a_pure_python_collate_stays_preprocessing_bound(run_profiled):
    """Two workers collating in Python: timed alone, more workers are no faster and a vectorised
    collate 1.35x. Beside two busy programs (measured: workers 8% busy, the main thread 52% in the
    run queue) it stays preprocessing-bound; it must never read as compute-bound."""
    proc, report = run_profiled(SCRIPTS / "fixes" / "python_collate.py", "--batches", "500")
    assert proc.returncode == 0, proc.stderr
    loaded = machine_loaded(report)
    summary = report["findings"][0]["summary"]
    assert report["primary"] != v.COMPUTE_BOUND, summary
    if loaded:
        # Beside other programs the idle workers can read as blocked on I/O (the main thread's
        # run queue and the wait then overlap: which one is the cause is not told apart yet).
        assert report["primary"] in (v.PREPROCESSING_BOUND, v.DATA_STARVED), summary
        return
    assert report["primary"] == v.PREPROCESSING_BOUND, summary
    f = report["findings"][0]
    assert any("collate" in (x.get("where") or "") or "collate" in x["text"] for x in f["fixes"])
    assert not any(x["change"].get("num_workers", [0, 0])[1] > 2 for x in f["fixes"])
