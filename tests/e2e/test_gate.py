"""`gpubottle gate`: budgets, noise, CI outputs and exit codes, through the command line read
in-process (cli.main: the same parsing, outputs and exit codes, without a Python start each); one
pair of traces and the CI example through the real `gpubottle` process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT, cpu_slot, gpubottle_here, with_harness
from factories import evidence

from gpubottle.cli import main
from gpubottle.rules import diagnose

TRACES = ROOT.parent / "shared" / "traces"
NW0 = TRACES / "kineto-resnet50-num_workers_0"
NW4 = TRACES / "kineto-resnet50-num_workers_4"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="needs ../shared/traces")


def _gate(*args: str, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`gpubottle gate ARGS` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    before, saved = os.getcwd(), {k: os.environ.get(k) for k in env or {}}
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["gate", *args])
    finally:
        os.chdir(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(["gate", *args], code, out.getvalue(), err.getvalue())


def _report_file(path: Path, steps: list[float]) -> Path:
    ev = evidence(steps=len(steps), step_s=0.1, main=1.0, tree=1.0)
    ev.steps.durations_s = steps
    ev.steps.input_wait_s = [0.0] * len(steps)
    ev.steps.warmup = 0
    path.write_text(json.dumps(diagnose(ev).to_contract()))
    return path


def _noisy(n: int, mean: float, sd: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [max(0.001, rng.gauss(mean, sd)) for _ in range(n)]


@needs_traces
def test_resnet_pair_fails_on_step_time_and_forbidden_data_starved(tmp_path: Path):
    junit = tmp_path / "gate.xml"
    proc = gpubottle_here("gate", str(NW0), "--baseline", str(NW4), "--forbid", "data-starved,oom-risk",
                     "--junit", str(junit))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED" in proc.stdout
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"step time", "no data-starved", "no oom-risk"}
    assert cases["step time"].find("failure") is not None
    assert cases["no data-starved"].find("failure") is not None
    assert cases["no oom-risk"].find("failure") is None and cases["no oom-risk"].find("skipped") is None
    # The counts agree with the cases, at both levels.
    for node in (root, suite):
        assert node.get("tests") == "3" and node.get("failures") == "2" and node.get("errors") == "0"


@needs_traces
def test_resnet_pair_reversed_passes():
    proc = _gate(str(NW4), "--baseline", str(NW0), "--forbid", "data-starved,oom-risk")
    assert proc.returncode == 0, proc.stdout
    assert "passed" in proc.stdout


@needs_traces
def test_identical_inputs_pass():
    proc = _gate(str(NW4), "--baseline", str(NW4), "--forbid", "data-starved")
    assert proc.returncode == 0, proc.stdout


def test_noisy_pair_within_tolerance_is_not_failed(tmp_path: Path):
    base = _report_file(tmp_path / "base.json", _noisy(60, 0.100, 0.012, 1))
    cur = _report_file(tmp_path / "cur.json", _noisy(60, 0.102, 0.012, 2))
    proc = _gate(str(cur), "--baseline", str(base), "--max-regression", "5%")
    assert proc.returncode == 0, proc.stdout


def test_difference_inside_the_noise_is_reported_as_such(tmp_path: Path):
    # +8% by its estimate, but with 5 very noisy steps a side the slowdown could be pure noise.
    base = _report_file(tmp_path / "base.json", [0.10, 0.16, 0.07, 0.12, 0.05])
    cur = _report_file(tmp_path / "cur.json", [0.11, 0.17, 0.08, 0.13, 0.0604])
    proc = _gate(str(cur), "--baseline", str(base), "--max-regression", "5%")
    assert proc.returncode == 5, proc.stdout
    assert "inside the noise" in proc.stdout.replace("\n", " ")
    allowed = _gate(str(cur), "--baseline", str(base), "--max-regression", "5%",
                        "--allow-inconclusive")
    assert allowed.returncode == 0


def test_clear_regression_fails(tmp_path: Path):
    base = _report_file(tmp_path / "base.json", _noisy(40, 0.100, 0.005, 3))
    cur = _report_file(tmp_path / "cur.json", _noisy(40, 0.115, 0.005, 4))
    proc = _gate(str(cur), "--baseline", str(base), "--max-regression", "10%")
    assert proc.returncode == 1, proc.stdout


def test_pyproject_config_and_github_outputs(tmp_path: Path):
    base = _report_file(tmp_path / "base.json", _noisy(40, 0.100, 0.005, 5))
    cur = _report_file(tmp_path / "cur.json", _noisy(40, 0.130, 0.005, 6))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gpubottle.gate]\nmax_regression = "10%"\nforbid = ["oom-risk"]\n'
        f'baseline = "{base}"\n'
    )
    summary = tmp_path / "summary.md"
    md = tmp_path / "gate.md"
    proc = _gate(str(cur), "--markdown", str(md), cwd=tmp_path,
                     env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1
    assert "::error title=gpubottle gate: step time::" in proc.stdout
    assert "| step time | ❌ fail |" in summary.read_text()
    assert "| no oom-risk | ✅ pass |" in md.read_text()


@pytest.mark.parametrize("args,code,message", [
    (["--forbid", "slow-ish"], 2, "unknown finding"),
    (["--max-regression", "ten"], 2, "not a number"),
    (["--max-peak-memory", "lots"], 2, "not a size"),
])
def test_bad_usage_exit_2(tmp_path: Path, args: list[str], code: int, message: str):
    cur = _report_file(tmp_path / "cur.json", [0.1] * 10)
    proc = _gate(str(cur), *args)
    assert proc.returncode == code and message in proc.stderr and "Traceback" not in proc.stderr


def test_bad_input_exit_3(tmp_path: Path):
    (tmp_path / "empty.json").write_text("")
    cur = _report_file(tmp_path / "cur.json", [0.1] * 10)
    for args in (["missing.json"], [str(tmp_path / "empty.json")],
                 [str(cur), "--baseline", str(tmp_path / "nope")]):
        proc = _gate(*args, cwd=tmp_path)
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr.startswith("gpubottle: error:")


def test_memory_and_gpu_budgets_without_measurements_are_inconclusive(tmp_path: Path):
    cur = _report_file(tmp_path / "cur.json", [0.1] * 10)
    proc = _gate(str(cur), "--min-gpu-busy", "50%", "--max-regression", "off")
    assert proc.returncode == 5
    assert "no GPU evidence" in proc.stdout


def test_ci_example_script_records_then_gates(tmp_path: Path):
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(GPUBOTTLE_OUT=str(tmp_path / "ci"), GPUBOTTLE_STEPS="20", OMP_WAIT_POLICY="PASSIVE",
               PYTHONPATH=with_harness(env.get("PYTHONPATH")))
    baseline = tmp_path / "baseline.json"
    cmd = ["bash", str(ROOT / "examples" / "ci" / "perf-gate.sh"), "tests/scripts/train_loop.py",
           str(baseline)]
    with cpu_slot():
        first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "no baseline yet" in first.stdout and baseline.exists()
    with cpu_slot():
        second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    # A real gate outcome (timing on a shared machine decides which), with its JUnit report.
    assert second.returncode in (0, 1, 5), second.stdout + second.stderr
    suite = ET.parse(tmp_path / "ci" / "gate.xml").getroot()
    assert suite.get("tests") == "4"  # step time + three forbidden findings
    assert (tmp_path / "ci" / "gate.md").read_text().startswith("### gpubottle gate")
    # --steps is gpubottle's own, not passed on to the script: the run stopped at 20 steps.
    current = json.loads((tmp_path / "ci" / "current.json").read_text())
    assert current["source"]["stop_reason"] == "steps" and current["steps"]["count"] == 20


@needs_traces
def test_forbidding_the_primary_verdict_fails_even_when_it_is_info(tmp_path: Path):
    # The 2021 num_workers=4 trace is compute-bound (an info-level finding, as a healthy run is).
    proc = _gate(str(NW4), "--forbid", "compute-bound", "--max-regression", "off")
    assert proc.returncode == 1, proc.stdout
    assert "primary verdict" in proc.stdout


def test_every_finding_a_rule_can_produce_is_forbiddable(tmp_path: Path):
    from gpubottle.gate.config import parse_forbid
    from gpubottle.vocabulary import FINDINGS

    assert parse_forbid(",".join(FINDINGS)) == list(FINDINGS)
    cur = _report_file(tmp_path / "cur.json", [0.1] * 10)
    proc = _gate(str(cur), "--forbid", "throttled,straggler", "--max-regression", "off")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # (--help wraps at hyphens as the terminal's width falls: "rule-" then "error" on the next line)
    help_text = re.sub(r"-\s+", "-", " ".join(_gate("--help").stdout.split()))
    assert all(name in help_text for name in FINDINGS), help_text


def test_junit_holds_messages_with_terminal_codes_and_control_characters(tmp_path: Path):
    from gpubottle.evidence import StackEvidence, StackFrameShare

    # A function name from the user's script (py-spy reports what the code says) reaches the message.
    ev = evidence(step_s=0.1, main=7.9, tree=7.9, cores=8)
    ev.stacks = StackEvidence(samples_main=200, main_outside_model=[
        StackFrameShare("\x1b[1;31mlog_it\x1b[0m\x00\x07\ufffe", "train.py:3", 0.6)])
    cur = tmp_path / "cur.json"
    cur.write_text(json.dumps(diagnose(ev).to_contract()))
    junit = tmp_path / "gate.xml"
    proc = _gate(str(cur), "--forbid", "compute-bound", "--max-regression", "off",
                     "--junit", str(junit))
    assert proc.returncode == 1, proc.stdout
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")  # parses: valid XML
    assert failure is not None
    message = failure.get("message") or ""
    assert "of it in log_it, outside the model" in message
    assert not any(ord(ch) < 32 or ch == "\ufffe" for ch in message)
