"""Each example gets the verdict its docstring promises, through the real CLI, and the fix helps."""

from __future__ import annotations

from conftest import EXAMPLES


def _line_of(path, needle):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


def _primary_finding(report):
    return next(f for f in report["findings"] if f["category"] == report["primary"])


def test_data_starved_example_and_its_fix_helps(run_profiled):
    proc, report = run_profiled(EXAMPLES / "data_starved.py", "--epochs", "1", "--samples", "1024")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "data-starved"
    f = _primary_finding(report)
    assert f["share"] > 0.4 and f["severity"] == "critical"
    fix = next(x for x in f["fixes"] if "num_workers" in x["change"])
    assert fix["where"] == f"examples/data_starved.py:{_line_of(EXAMPLES / 'data_starved.py', 'DataLoader(')}"
    old, new = fix["change"]["num_workers"]
    assert old == 0 and new >= 2
    before = report["steps"]["mean_s"]
    predicted = fix["expected_step_s"]
    assert predicted < before / 3

    # Apply the fix as the user would, and measure again.
    proc2, report2 = run_profiled(EXAMPLES / "data_starved.py", "--epochs", "1", "--samples", "1024",
                                  "--num-workers", str(new))
    assert proc2.returncode == 0, proc2.stderr
    after = report2["steps"]["mean_s"]
    # The run got as fast as the fix predicted (within a factor of two), and the wait shrank.
    assert after < 2 * predicted and after < before / 3
    assert report2["steps"]["input_wait_share"] < f["share"] * 0.75


def test_preprocessing_bound_example(run_profiled):
    proc, report = run_profiled(EXAMPLES / "preprocessing_bound.py", "--samples", "640")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "preprocessing-bound"
    f = _primary_finding(report)
    assert f["share"] > 0.3
    getitem = _line_of(EXAMPLES / "preprocessing_bound.py", "def __getitem__")
    assert any(x["where"] == f"examples/preprocessing_bound.py:{getitem}" for x in f["fixes"])
    jitter = _line_of(EXAMPLES / "preprocessing_bound.py", "def colour_jitter")
    assert f["fixes"][0]["where"] == f"examples/preprocessing_bound.py:{jitter}"


def test_compute_bound_example(run_profiled):
    proc, report = run_profiled(EXAMPLES / "compute_bound.py", "--steps", "60")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "compute-bound"
    assert not any(f["category"] in ("data-starved", "preprocessing-bound") for f in report["findings"])


def test_oom_risk_example(run_profiled):
    proc, report = run_profiled(EXAMPLES / "oom_risk.py", "--seconds", "13")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "oom-risk"
    f = _primary_finding(report)
    assert f["severity"] == "critical"
    assert any("grows" in e["text"] for e in f["evidence"])
    growth = report["evidence"]["memory"]["growth_bytes_per_s"]
    assert growth > 5 * (1 << 20)
