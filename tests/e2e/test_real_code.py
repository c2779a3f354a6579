"""Scripts shaped like real code, where it departs from the plain loop (issue 31): each through the
real CLI, each with a fix that must point where the user makes the change."""

from __future__ import annotations

from conftest import SCRIPTS

REAL = SCRIPTS / "real_code"


def _fixes(report: dict) -> list[dict]:
    return [x for f in report["findings"] for x in f["fixes"]]


def test_a_library_dataset_gets_fixes_at_the_users_loader_never_inside_torch(run_profiled):
    """A TensorDataset indexed per row: its __getitem__ is torch's, so the fixes point at the
    DataLoader(...) line and say what the time is (indexing and collating one row at a time)."""
    proc, r = run_profiled(REAL / "tensor_rows.py", "--steps", "80", opts=("--no-status",))
    assert proc.returncode == 0 and r is not None, proc.stderr[-2000:]
    loader_line = next(i for i, s in enumerate((REAL / "tensor_rows.py").read_text().splitlines(), 1)
                       if s.startswith("loader = DataLoader("))
    places = [x["where"] for x in _fixes(r) if x["where"]]
    assert places and not any("site-packages" in w or "/lib/python" in w for w in places), places
    if r["primary"] == "preprocessing-bound":  # (beside busy programs it may read as waiting)
        batch = [x for x in _fixes(r) if "BatchSampler" in x["text"]]
        assert batch and batch[0]["where"].endswith(f"tensor_rows.py:{loader_line}"), _fixes(r)


def test_workers_that_wait_are_never_offered_fewer(run_profiled):
    """Eight workers whose samples each wait 0.1 ms, on this 2-core machine: their waits overlap,
    so the report never offers fewer workers (nor none), whatever its verdict."""
    proc, r = run_profiled(REAL / "waiting_workers.py", "--steps", "120", opts=("--no-status",))
    assert proc.returncode == 0 and r is not None, proc.stderr[-2000:]
    for fix in _fixes(r):
        workers = fix["change"].get("num_workers")
        assert workers is None or workers[1] >= workers[0], fix
        assert "num_workers=0" not in fix["text"], fix
