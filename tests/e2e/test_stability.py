"""A verdict does not depend on the profiler's own options: 8 workers on 2 cores handing 1 MB
batches to the loop (the CPU is the limit: timed, 8, 10 and 16 workers take the same time, 2 are
slower) are preprocessing-bound with py-spy and without it, and no fix asks for more workers."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS

from gpubottle import vocabulary as v


@pytest.mark.parametrize("stacks", [True, False])
def test_busy_workers_get_the_same_verdict_with_and_without_stacks(run_profiled, stacks: bool):
    opts = () if stacks else ("--no-stacks",)
    proc, report = run_profiled(SCRIPTS / "fixes" / "busy_workers.py", "--batches", "300", opts=opts)
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == v.PREPROCESSING_BOUND, report["findings"][0]["summary"]
    more = [x for f in report["findings"] for x in f["fixes"]
            if x["change"].get("num_workers", [0, 0])[1] > 8]
    assert not more
