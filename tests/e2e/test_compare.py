"""`gpubottle compare` through the real CLI: a script that evaluates from slow storage is run, its
--patch applied with `patch -p1` as a user would, run again and compared; and the inputs that are
not two runs of one script give a clear result or a clear error (exit 3), never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SCRIPTS, TRACES, gpubottle_here, machine_loaded
from factories import evidence
from script_lines import line_of

from gpubottle.render.json_out import render_json
from gpubottle.rules import diagnose

SCRIPT = SCRIPTS / "compare" / "eval_from_files.py"


def _run(replayed_run, cwd: Path) -> tuple[Path, dict]:
    # Three evaluation passes of 160 reads of 8 ms: the evaluation (~4 s) is most of the run, so
    # the workers' own cost (eleven of them on two cores beside other tests' runs) cannot hide it.
    # Recorded (tests/runs/, the script's folder as @CWD@): its two live runs were 8-10 s of the
    # suite's CPU; `run --patch` and the run's own pass-through are test_phases' and test_cli_run's.
    proc, report = replayed_run(cwd / "eval_from_files.py", "--latency-ms", "8", "--eval-every", "40",
                                opts=("--no-status",), cwd=cwd, timeout=300)
    assert proc.returncode == 0 and report is not None, proc.stderr[-3000:]
    return replayed_run.run_dir, report


def test_the_patched_run_is_compared_with_the_first_and_its_promise(replayed_run, tmp_path: Path):
    shutil.copy(SCRIPT, tmp_path / "eval_from_files.py")
    before, first = _run(replayed_run, tmp_path)
    # A saved run's fixes as a patch, applied from the folder it ran in, as a user would.
    made = gpubottle_here("report", str(before), "--patch", "fix.patch", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    applied = subprocess.run(["patch", "-p1", "-i", "fix.patch"], cwd=tmp_path, capture_output=True,
                             text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after, second = _run(replayed_run, tmp_path)
    proc = gpubottle_here("compare", str(before), str(after), "--json", "cmp.json", "--html", "cmp.html",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((tmp_path / "cmp.json").read_text())
    assert c["schema"] == "gpubottle.compare/1"
    # The runs' own wall times, as each report has it. Which is shorter is the machine's to say: in
    # a fresh clone's suite the patched run's start-up and training took 2 s longer beside other
    # tests (import torch 1.7 -> 2.6 s) while its evaluation went 4.5 -> 0.7 s.
    walls = [r["source"]["duration_s"] for r in (first, second)]
    assert [c["run"]["before_s"], c["run"]["after_s"]] == pytest.approx(walls, abs=0.01)
    assert c["run"]["speedup"] == pytest.approx(walls[0] / walls[1], rel=0.01)
    phases = {p["phase"]: p for p in c["phases"]}
    if not machine_loaded(second):  # (beside two busy programs and the suite's runs the workers
        assert phases["eval"]["after_s"] < phases["eval"]["before_s"] / 2  # waited for cores: 5.5 -> 5.8 s)
    val_line = line_of(SCRIPT, "val = DataLoader")
    [workers] = [x for x in c["changes"] if x["setting"] == "num_workers"]
    assert workers["before"] == 0 and workers["after"] > 0 and workers["advised"]
    assert workers["where"] == f"eval_from_files.py:{val_line}"
    [fix] = [f for f in c["fixes"] if f["applied"] == "applied"]
    assert fix["measured_run_s"] == c["run"]["after_s"]
    assert fix["predicted_run_s"] is not None and fix["predicted_run_s"] < c["run"]["before_s"]
    assert fix["held"] is not None
    text = proc.stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    assert f"num_workers: 0 -> {workers['after']} (eval_from_files.py:{val_line})  advised" in text
    # What the advice held to is said either way the loaded machine made the whole run go.
    held = "of the promised gain" if walls[1] < walls[0] else "the run got slower, not faster"
    assert held in text and "evaluation" in text, text
    assert "<svg" in (tmp_path / "cmp.html").read_text()
    # A report JSON and a run directory compare alike.
    (tmp_path / "before.json").write_text(json.dumps(first))
    mixed = gpubottle_here("compare", "before.json", str(after), "--json", "-", cwd=tmp_path)
    assert mixed.returncode == 0 and json.loads(mixed.stdout)["run"] == c["run"]
    # The run with itself: said, and nothing measured.
    same = gpubottle_here("compare", str(after), str(after), cwd=tmp_path)
    assert same.returncode == 0 and "both sides are the same run" in same.stdout


def _report(path: Path, target: str, step_s: float) -> Path:
    ev = evidence(step_s=step_s)
    ev.run.target, ev.run.duration_s = target, 60 * step_s
    path.write_text(_json(ev))
    return path


def _json(ev: object) -> str:
    import io

    buf = io.StringIO()
    render_json(diagnose(ev), buf)  # type: ignore[arg-type]
    return buf.getvalue()


@pytest.mark.light
def test_inputs_that_are_not_two_runs_get_a_clear_result_or_exit_3(tmp_path: Path):
    a = _report(tmp_path / "a.json", "train.py", 0.1)
    b = _report(tmp_path / "b.json", "finetune.py", 0.05)
    other = gpubottle_here("compare", str(a), str(b))
    assert other.returncode == 0 and "these are different programs" in other.stdout
    for bad, said in ((tmp_path / "missing", "no such file or directory"),
                      (TRACES / "fed.pt.trace.json.gz", "is a trace, not a run"),
                      (tmp_path / "empty.json", "is empty")):
        if bad.name == "empty.json":
            bad.write_text("")
        proc = gpubottle_here("compare", str(a), str(bad))
        assert proc.returncode == 3, (bad, proc.stdout, proc.stderr)
        assert said in proc.stderr and "Traceback" not in proc.stderr
    usage = gpubottle_here("compare", str(a))
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
