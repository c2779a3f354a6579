"""A pytest plugin that writes each test's CPU (its own and its subprocesses': the `gpubottle` runs,
their scripts, py-spy) and wall time, one JSON line a test, to $CPU_PER_TEST (default
cpu-per-test.jsonl). Which tests the suite's CPU goes to, for keeping it under its 5 minutes:

    PYTHONPATH=tests/support .venv/bin/python -m pytest -p cpu_per_test -n 3 tests --ignore=tests/check_fixes

Wall time beside other tests includes waiting for a CPU slot; the CPU does not. With
GPUBOTTLE_RUN_LOG=FILE, tests/conftest.py's `gpubottle` helper also writes one line for each command
it runs (the test, its arguments, the command's CPU with its children's, its wall time).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    c0, s0, t0 = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF), time.perf_counter()
    began = time.time()
    yield
    cpu = _cpu(resource.RUSAGE_CHILDREN) - c0 + _cpu(resource.RUSAGE_SELF) - s0
    with open(os.environ.get("CPU_PER_TEST", "cpu-per-test.jsonl"), "a") as fh:
        # (when it began and in which test process: where the suite's cores sat idle)
        fh.write(json.dumps({"test": item.nodeid, "cpu_s": round(cpu, 2),
                             "wall_s": round(time.perf_counter() - t0, 2), "began": round(began, 2),
                             "worker": os.environ.get("PYTEST_XDIST_WORKER", "")}) + "\n")
