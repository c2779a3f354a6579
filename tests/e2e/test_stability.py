"""A verdict does not depend on the profiler's own options nor on other programs' load: 8 workers
on 2 cores handing 1 MB batches to the loop (the CPU is the limit: timed, 8, 10 and 16 workers take
the same time, 2 are slower) are preprocessing-bound with py-spy and without it, and no fix asks
for more workers; a Python collate in two workers stays preprocessing-bound beside busy programs.
The first two diagnose recorded runs (each made live beside nothing else, the second beside four
busy programs: `make record-runs`): alone on the machine they took every CPU slot for ~35 s of the
suite, over half of it four spinning programs' (tests/support/recorded_runs.py)."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, busy_programs, machine_loaded

from gpubottle import vocabulary as v


def _more_workers(report: dict, than: int) -> list[dict]:
    return [x for f in report["findings"] for x in f["fixes"]
            if x["change"].get("num_workers", [0, 0])[1] > than]


@pytest.mark.exclusive_when_live
def test_busy_workers_get_the_same_verdict_with_and_without_stacks(replayed_run):
    verdicts = []
    for opts in ((), ("--no-stacks",)):
        proc, report = replayed_run(SCRIPTS / "fixes" / "busy_workers.py", "--batches", "300", opts=opts)
        assert proc.returncode == 0, proc.stderr
        verdicts.append((report["primary"], report["findings"][0]["summary"], machine_loaded(report)))
        assert not _more_workers(report, 8), report["findings"][0]
    assert [x[0] for x in verdicts] == [v.PREPROCESSING_BOUND] * 2, verdicts


@pytest.mark.exclusive_when_live
def test_a_python_collate_beside_busy_programs_is_not_taken_for_slow_reads(replayed_run):
    """Beside four busy programs on 2 cores the loop waits for data more than half the time while its
    workers are mostly idle: the main process waits for a core to take their batches (measured in
    the wait: 34-42% run queue). Judged by the main thread's run queue over the whole run (47%,
    below the wait share) this read as workers blocked on reads, with 'num_workers=6' as fix 1.
    On a faster machine the wait was 21-27% run queue (under the consumer rule) and it read so
    again in 4 of 6 runs, while the workers queued for a core longer than they ran (13-22% CPU,
    21-42% run queue) and their stacks were on their index queue 72-100% of the time: waiting for
    work, not for reads; each now says so (6 of 6 preprocessing-bound)."""
    proc, report = replayed_run(SCRIPTS / "fixes" / "python_collate.py", "--batches", "200",
                                beside=lambda: busy_programs(4))
    assert proc.returncode == 0, proc.stderr
    f = report["findings"][0]
    assert report["primary"] == v.PREPROCESSING_BOUND, f["summary"]
    assert not _more_workers(report, 2), f["fixes"]
    assert machine_loaded(report)  # and the load is said (cpu-contention), not taken for the cause
    queued = [q for q in report["evidence"]["steps"]["input_wait_run_queue_s"] if q is not None]
    assert queued, "the wait's run queue was not measured"


def test_a_pure_python_collate_stays_preprocessing_bound(replayed_run):
    """Two workers collating in Python: timed alone, more workers are no faster and a vectorised
    collate 1.35x. It must never read as compute-bound, nor as data-starved."""
    proc, report = replayed_run(SCRIPTS / "fixes" / "python_collate.py", "--batches", "300",
                                opts=("--stack-rate", "20"))
    assert proc.returncode == 0, proc.stderr
    f = report["findings"][0]
    assert report["primary"] == v.PREPROCESSING_BOUND, f["summary"]
    assert not _more_workers(report, 2), f["fixes"]
    if not machine_loaded(report):  # beside other runs py-spy may not sample the collate enough
        assert any("collate" in (x.get("where") or "") or "collate" in x["text"] for x in f["fixes"])
