"""A loop fed by its own process's threads (a concurrent.futures pool): the wait at the pool's
results is the loop's input, and the threads' work is named where the batches are made."""

from __future__ import annotations

from conftest import SCRIPTS, machine_loaded

REAL = SCRIPTS / "real_code"


def test_a_loop_waiting_on_a_thread_pools_results_is_data_starved_at_the_pools_function(replayed_run):
    """`list(pool.map(make_sample, idx))` each step, make_sample computing 256 features in Python:
    read "compute-bound: torch.compile", 76% of the main thread "the loop's own code, not pinned
    to one function" (a future's result was no receive, and the pool's threads were not read)."""
    script = REAL / "threadpool_batches.py"
    proc, r = replayed_run(script, opts=("--no-status", "--stack-rate", "20"))
    assert proc.returncode == 0 and r is not None, proc.stderr[-2000:]
    lines = script.read_text().splitlines()
    wait = next(i for i, s in enumerate(lines, 1) if "pool.map(make_sample" in s)
    made = next(i for i, s in enumerate(lines, 1) if s.strip().startswith("row = [math.sin("))
    assert r["primary"] != "compute-bound" or machine_loaded(r), [f["summary"] for f in r["findings"]]
    [f] = [f for f in r["findings"] if f["category"] == "data-starved"]
    assert "producer" in f["summary"] and f"threadpool_batches.py:{wait}" in f["evidence"][0]["text"]
    assert f["evidence"][1]["text"].startswith("the process's other threads (the producers) are busy")
    hot = f"in make_sample (tests/scripts/real_code/threadpool_batches.py:{made})"
    assert hot in f["evidence"][1]["text"], f["evidence"]
    fix = f["fixes"][0]
    assert fix["text"].startswith("try: ") and "shares the loop's GIL" in fix["text"]
    assert fix["where"].endswith(f"threadpool_batches.py:{made}") and fix.get("expected") is None


def test_a_loop_waiting_on_a_process_pools_map_names_the_workers_function(replayed_run):
    """`pool.map(make_sample, idx)` with a multiprocessing.Pool(2): the wait in pool.py was no
    receive ("loop-overhead" at the tensor built after it led), and a forked worker's stack holds
    the script's main beneath its start, which was named as where the batches are made."""
    script = REAL / "process_pool_batches.py"
    proc, r = replayed_run(script, opts=("--no-status", "--stack-rate", "20"))
    assert proc.returncode == 0 and r is not None, proc.stderr[-2000:]
    lines = script.read_text().splitlines()
    wait = next(i for i, s in enumerate(lines, 1) if "pool.map(make_sample" in s)
    made = next(i for i, s in enumerate(lines, 1) if s.strip().startswith("row = [math.sin("))
    [f] = [f for f in r["findings"] if f["category"] == "data-starved"]
    assert f"process_pool_batches.py:{wait}" in f["evidence"][0]["text"], f["evidence"]
    assert "run's other processes (the producers)" in f["evidence"][1]["text"], f["evidence"]
    assert f["fixes"][0]["where"].endswith(f"process_pool_batches.py:{made}"), f["fixes"][0]
