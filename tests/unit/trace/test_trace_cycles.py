"""A folder of traces: tensorboard_trace_handler's cycles of one process are that process, the
last one read; different processes stay ranks."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import TRACES

from gpubottle.trace.load import latest_cycles, trace_evidence


def test_only_the_last_cycle_of_each_process_is_kept() -> None:
    paths = ["/t/host_7.1795777141572593779.pt.trace.json.gz",
             "/t/host_7.1795777141766463749.pt.trace.json.gz",
             "/t/host_8.1795777141600000000.pt.trace.json", "/t/rank0.json"]
    kept, notes = latest_cycles(paths)
    assert kept == paths[1:]
    [note] = notes
    assert note.startswith("host_7: 2 profiler cycles of one process") and "1795777141766463749" in note


def test_two_cycles_read_as_one_process_and_two_processes_as_ranks(tmp_path: Path) -> None:
    src = TRACES / "fed.pt.trace.json.gz"
    one = tmp_path / "one"
    one.mkdir()
    for ns in ("1795777141572593779", "1795777141766463749"):
        shutil.copy(src, one / f"vm_28700.{ns}.pt.trace.json.gz")
    ev = trace_evidence(str(one))
    assert ev.ranks == [] and ev.run.trace is not None and len(ev.run.trace.files) == 1
    assert any("2 profiler cycles" in n for n in ev.run.trace.notes)
    two = tmp_path / "two"
    two.mkdir()
    for worker in ("vm_1", "vm_2"):
        shutil.copy(src, two / f"{worker}.1795777141572593779.pt.trace.json.gz")
    assert len(trace_evidence(str(two)).ranks) == 2
