"""Which of the script's children are its DataLoader's workers: the ones the probes reported at each
epoch's start; children that merely look like workers (forked from the main process) only where a
report may be missing."""

from __future__ import annotations

from gpubottle.analysis.samples import Samples, loader_workers
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import IterStarted, LoaderBuilt, ProcSeen

MAIN = 100
BOOT = "python -m gpubottle.launch.bootstrap train.py"


def _run(reported: list[int], workers: int = 2) -> tuple[Samples, ChildEvents]:
    s = Samples()
    # Two forked workers and an uploader process the script forked itself: all three keep the
    # main process's command line.
    for pid in (101, 102, 103):
        s.procs[pid] = ProcSeen(pid, MAIN, "python", BOOT, 1.0)
    ev = ChildEvents()
    ev.add(LoaderBuilt({"id": 1, "num_workers": workers}))
    ev.add(IterStarted(1, 2.0, reported))
    return s, ev


def test_reported_workers_are_the_workers_and_a_forked_side_process_is_not():
    s, ev = _run([101, 102])
    assert loader_workers(s, MAIN, ev) == {101, 102}


def test_children_that_look_like_workers_count_where_a_report_is_missing():
    s, ev = _run([])
    assert loader_workers(s, MAIN, ev) == {101, 102, 103}


def test_without_a_dataloader_no_child_is_a_worker():
    s = Samples()
    s.procs[101] = ProcSeen(101, MAIN, "python", BOOT, 1.0)
    assert loader_workers(s, MAIN, ChildEvents()) == set()
