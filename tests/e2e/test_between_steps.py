"""Long gaps between the training steps: the work that holds the loop there is said as the run's
(rules/phases/pauses.py), and the step findings leave its stacks out (analysis/build.py)."""

from __future__ import annotations

from conftest import SCRIPTS

REAL = SCRIPTS / "real_code"


def test_a_sort_at_each_epochs_start_is_said_between_the_steps_never_as_each_steps(replayed_run):
    """A curriculum's order sorted again at each epoch's start by a key computed in Python: 0.4 s
    an epoch against 1.2-ms steps. It read "loop-overhead, difficulty takes 76% of each step ... it
    must run every step" (the stacks inside the gaps counted as the steps'), while the account
    said the same 2.1 s were between the steps. Sorted once before the loop: 7.3-8.4 s -> 5.3 s."""
    script = REAL / "sort_each_epoch.py"
    proc, r = replayed_run(script, opts=("--no-status", "--stack-rate", "20"))
    assert proc.returncode == 0 and r is not None, proc.stderr[-2000:]
    lines = script.read_text().splitlines()
    body = next(i for i, s in enumerate(lines, 1) if s.strip().startswith("return sum(abs(v - 0.5)"))
    at = (f"sort_each_epoch.py:{body - 1}", f"sort_each_epoch.py:{body}")  # (its def, or its line)
    [f] = [g for g in r["findings"] if g.get("phase") == "between-steps"]
    assert f["category"] == "loop-overhead" and f["severity"] in ("warning", "critical"), f
    assert "difficulty" in f["summary"] and any(x in f["summary"] for x in at), f["summary"]
    assert "every 100 steps" in f["evidence"][0]["text"], f["evidence"]
    fix = f["fixes"][0]
    sort = "order = sorted(range(len(data)), key=difficulty)"
    call = next(i for i, s in enumerate(lines, 1) if s.strip() == sort)
    # At the loop's call of it, where the change is made.
    assert fix["where"].endswith(f"sort_each_epoch.py:{call}"), fix
    assert "do it once before the loop" in fix["text"], fix
    assert f"called at tests/scripts/real_code/sort_each_epoch.py:{call}" in f["summary"]
    assert fix.get("expected") is None and "try it and time it" in fix["text"]  # no number promised
    # No step finding says difficulty runs in every step.
    for g in r["findings"]:
        if g.get("phase", "train") == "train":
            assert "difficulty" not in g["summary"], g["summary"]
    assert r["findings"][0] == f  # it costs the run more than the steps' verdict: it leads
