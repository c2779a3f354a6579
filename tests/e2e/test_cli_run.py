"""`gpubottle run` end to end through the real CLI: passthrough, early stop, crashes, signals."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, SCRIPTS, gpubottle, load_report, machine_loaded

from gpubottle.analysis.own_cost import hooks_s
from gpubottle.collect.events import read_events


def test_argv_stdout_stderr_and_exit_code_pass_through(run_profiled):
    proc, report = run_profiled(SCRIPTS / "argv_exit.py", "7", "--flag", "a b", "--steps", "3")
    assert proc.returncode == 7
    assert "name=__main__" in proc.stdout
    # Options after the script belong to the script, even ones gpubottle also has (--steps).
    assert "argv=7|--flag|a b|--steps|3" in proc.stdout
    assert proc.stdout.splitlines()[2].endswith("argv_exit.py")
    assert "to-stderr" in proc.stderr
    assert report is not None and report["source"]["exit_code"] == 7
    # gpubottle's own output stays off the script's stdout.
    assert "gpubottle" not in proc.stdout


def test_crashing_script_still_reports_and_keeps_status(run_profiled, tmp_path: Path):
    proc, report = run_profiled(SCRIPTS / "train_loop.py", "--crash-at", "8")
    assert proc.returncode == 1
    assert "RuntimeError: boom at step 8" in proc.stderr  # the script's own traceback
    # ...as `python train_loop.py` prints it: from the script's frame, none of gpubottle's or runpy's.
    tb = proc.stderr[proc.stderr.index("Traceback (most recent call last):"):]
    frames = [line for line in tb.splitlines() if line.startswith('  File "')]
    assert frames and all("train_loop.py" in f for f in frames), tb[:2000]
    full = (tmp_path / "run" / "traceback.txt").read_text()  # the whole one stays in the run dir
    assert "bootstrap.py" in full and "RuntimeError: boom at step 8" in full
    assert "gpubottle verdict" in proc.stderr
    assert report["source"]["stop_reason"] == "failed"
    assert report["source"]["exception"].startswith("RuntimeError: boom")
    assert report["steps"]["count"] >= 8


def test_sigkilled_script_reports_what_was_collected(run_profiled):
    proc, report = run_profiled(SCRIPTS / "train_loop.py", "--sigkill-at", "150")
    assert proc.returncode == -signal.SIGKILL  # gpubottle ends by the same signal
    assert "step 150" in proc.stdout
    assert report["source"]["stop_reason"] == "killed"
    # Events are flushed twice a second: all but the last half second survive the kill.
    assert report["steps"]["count"] >= 100


def test_early_stop_by_steps(loop_run):
    proc, report = loop_run.proc, loop_run.report
    assert proc.returncode == 0 and report is not None
    # The stop comes inside the 30th optimizer.step(): the rest of that iteration does not run.
    assert "step 28" in proc.stdout and "step 29" not in proc.stdout
    assert report["source"]["stop_reason"] == "steps"
    assert report["steps"]["count"] == 30
    assert report["steps"]["source"] == "optimizer"
    # No DataLoader: no input wait was measured, so its share is null, not 0.
    assert report["steps"]["input_wait_share"] is None


def test_gpubottles_own_start_is_its_line_and_the_account_sums_to_the_run(loop_run):
    """`gpubottle run`'s start before it launched the script, and its imports and probes in the
    script's process before the script's first line: gpubottle's line, not the script's start-up."""
    report = loop_run.report
    account = {e["phase"]: e for e in report["evidence"]["account"]}
    start = account["gpubottle"]["parts"]["its start (before the script's first line)"]
    assert 0.02 < start < 5.0
    assert "Python and gpubottle starting" not in account["startup"]["parts"]
    total = sum(e["seconds"] for e in account.values())
    assert total == pytest.approx(report["source"]["duration_s"], abs=0.05)
    # The machine's description is read at the run's end, off the launch's path, and still saved.
    assert report["source"]["platform"] == platform.platform()


def test_the_hot_hooks_time_themselves_and_the_account_counts_that(loop_run):
    """Each backward and optimizer step timed its own hook in the script's process: one timed
    record each, a few microseconds apiece, and the account's hooks part is that time plus the
    rest priced per record and the step probes."""
    ev = read_events(str(loop_run.dir / "run" / "events.jsonl"))
    cost = ev.probe_cost
    assert cost is not None
    assert cost.timed == len(ev.backwards) + len(ev.opt_steps) + len(ev.batches) > 0
    assert 0 < cost.hooks_s / cost.timed < 200e-6
    assert 0 < cost.per_call_s < 1e-4 and cost.calls > cost.timed
    parts = {e["phase"]: e for e in loop_run.report["evidence"]["account"]}["gpubottle"]["parts"]
    assert parts["hooks in the script"] == pytest.approx(hooks_s(ev), abs=1e-3)


def test_short_steps_run_blocks_without_hooks_that_measure_their_cost_and_still_stop_at_steps(
        run_profiled, tmp_path: Path):
    """Steps of well under a millisecond, where the hooks' own time is a point of the step or more:
    the run turns them off in blocks of steps (counted, not recorded), the report leaves those out
    of its statistics, the account's hooks part is at least the hooks' own time, and --steps still
    stops at the step it names."""
    from gpubottle.probes.unhooked import EVERY_BLOCKS

    # ~0.5-ms steps: 300 and a second before deciding, then one block of ~180 in 4, five blocks
    # compared before their cost stands (9000 steps cost the suite ~15 s of CPU; 5000 ~9)
    steps_n = 5000
    proc, report = run_profiled(ROOT / "benchmarks" / "tiny_steps.py",
                                opts=("--no-stacks", "--steps", str(steps_n)))
    assert proc.returncode == 0 and report is not None, proc.stderr[-2000:]
    steps = report["evidence"]["steps"]
    ev = read_events(str(tmp_path / "run" / "events.jsonl"))
    assert report["source"]["stop_reason"] == "steps" and report["steps"]["count"] == steps_n
    recorded = len(ev.opt_steps)
    if not ev.unhooked:  # other programs stretched the steps (a suite beside three busy ones):
        assert machine_loaded(report) and recorded == steps_n, report["notes"]  # the hooks under a point
        return
    assert sum(int(b.steps) for b in ev.unhooked) + recorded == steps_n
    assert len(steps["unhooked"]) == steps_n - recorded == report["steps"]["unhooked"]
    # (a tenth while measuring; past 15 s, beside busy programs, nine tenths: the sparse blocks)
    assert len(steps["unhooked"]) - steps["thinned"] < steps_n / EVERY_BLOCKS * 1.5
    assert report["steps"]["measured"] <= recorded
    parts = {e["phase"]: e for e in report["evidence"]["account"]}["gpubottle"]["parts"]
    assert parts["hooks in the script"] >= hooks_s(ev) - 1e-3  # (their own clocks, the floor)
    # Measured (five blocks or more, steady enough: a quiet machine's), or said why not.
    m = steps["in_place"]
    said = "in place, measured against" if m is not None and m["resolved"] else "without its hooks"
    if len(steps["unhooked"]) == steps["thinned"]:  # (only the sparse blocks: no measurement ran)
        said = f"{steps['thinned']} steps counted, not timed"
    assert m is None or not m["resolved"] or m["per_step_s"] > 0
    assert any(said in n for n in report["notes"]), report["notes"]


def test_short_fetches_read_their_threads_times_one_in_8_then_32_the_rest_take_the_mean(
        run_profiled, tmp_path: Path):
    """An in-memory loader's fetches take well under a millisecond: after the first 32 (all read),
    the probe reads the waiting thread's CPU and run-queue time around one fetch in 8, after 256
    of those one in 32 (its reads cost more in place than such a fetch is worth); the run's
    evidence still has every step's loading CPU and run-queue time, the unread filled with the
    read ones' mean."""
    from gpubottle.collect.events import EventTail
    from gpubottle.probes.thread_sched import (
        RECENT,
        SAMPLE_EVERY,
        SAMPLE_EVERY_LATER,
        SAMPLE_LATER_AFTER,
    )

    # (batches of 8: a fetch of 64 took 1.3 ms on a slow hour of the 2-core VM, over SHORT_FETCH_S)
    proc, report = run_profiled(ROOT / "examples" / "compute_bound.py", "--steps", "400", "--width", "32",
                                "--batch-size", "8", opts=("--no-stacks", "--no-status"))
    assert proc.returncode == 0 and report is not None, proc.stderr[-2000:]
    events = str(tmp_path / "run" / "events.jsonl")  # run_profiled's run directory
    raw = EventTail(events)
    raw.poll()
    batches = raw.events.batches  # as written, before the fill
    later = batches[RECENT:]
    read = [b for b in later if b.cpu is not None and b.rq is not None]
    # (Steps this short may run blocks without the hooks, probes/unhooked.py: fetched, not recorded.)
    unhooked = sum(int(u.steps) for u in raw.events.unhooked)
    assert len(batches) + unhooked >= 400, (len(batches), unhooked)
    assert all(b.cpu is not None and b.rq is not None for b in batches[:RECENT])
    expected = (SAMPLE_LATER_AFTER / SAMPLE_EVERY
                + max(0, len(later) - SAMPLE_LATER_AFTER) / SAMPLE_EVERY_LATER)
    assert abs(len(read) - expected) <= 2, (len(read), len(later))
    filled = read_events(events).batches
    assert all(b.cpu is not None and b.rq is not None for b in filled)
    steps = report["evidence"]["steps"]
    off = set(steps["unhooked"])  # (a block's steps have no fetch recorded: left out, None)
    assert len(steps["input_wait_cpu_s"]) >= 300
    for values in (steps["input_wait_cpu_s"], steps["input_wait_run_queue_s"]):
        assert all(x is not None for i, x in enumerate(values) if i not in off)


@pytest.mark.light
def test_early_stop_by_duration(run_profiled):
    start = time.monotonic()
    proc, report = run_profiled(SCRIPTS / "train_loop.py", opts=("--duration", "8"))
    assert proc.returncode == 0
    assert time.monotonic() - start < 40
    assert report["source"]["stop_reason"] == "duration"
    # The clock starts at launch (torch's import included), and stops at a step boundary: the
    # first one after the deadline when the import alone took 8 s (beside two busy programs).
    assert report["steps"]["count"] >= 1
    assert 7.5 < report["source"]["duration_s"] < 30


def test_loop_without_torch_optim_uses_backward_as_clock(manual_loop_run):
    proc, report = manual_loop_run.proc, manual_loop_run.report
    assert proc.returncode == 0 and report is not None
    assert report["steps"]["source"] == "backward"
    assert report["steps"]["count"] == 20


def test_spawn_workers_with_dataset_defined_in_script(run_profiled):
    proc, report = run_profiled(SCRIPTS / "spawn_workers.py")
    assert proc.returncode == 0, proc.stderr
    assert "total=85344" in proc.stdout
    (loader,) = report["evidence"]["loaders"]
    assert loader["start_method"] == "spawn"
    assert loader["num_workers"] == 2
    assert len(loader["worker_pids"]) == 2
    assert loader["site"].endswith("spawn_workers.py:18")
    assert loader["dataset_class"] == "Squares"
    assert report["evidence"]["cpu"]["workers_seen"] >= 1


def test_sigint_is_forwarded_and_still_reports(tmp_path: Path):
    """Started as a shell's background job is (SIGINT ignored from its start: the script's
    interpreter, started before the supervisor takes SIGINT, must not keep that ignore)."""
    out = tmp_path / "run"
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpubottle", "run", "--out", str(out), str(SCRIPTS / "train_loop.py")],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("step 30"):
            break
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT  # as plain python ends on an uncaught Ctrl-C
    assert "KeyboardInterrupt" in stderr
    assert "gpubottle verdict" in stderr
    report = load_report(out / "report.json")
    assert report["source"]["stop_reason"] == "interrupted"
    assert report["steps"]["count"] >= 30


def test_module_mode(tmp_path: Path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(
        "import sys\nprint('mod', __name__, sys.argv[1:])\n"
    )
    proc = gpubottle("run", "--out", str(tmp_path / "r"), "-m", "mypkg.train", "x", "--y", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "mod __main__ ['x', '--y']" in proc.stdout


def test_script_without_torch_is_inconclusive_and_says_why(run_profiled):
    proc, report = run_profiled(SCRIPTS / "no_torch.py")
    assert proc.returncode == 0
    assert "total=333283335000" in proc.stdout
    assert report["primary"] == "inconclusive"
    assert any("no training steps" in n for n in report["notes"])


def test_a_syntax_error_reads_as_under_plain_python(tmp_path: Path):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nx = = 1\n")
    proc = gpubottle("run", "--no-status", "--no-stacks", "--out", str(tmp_path / "run"), str(script))
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == plain.returncode == 1
    head = proc.stderr[:proc.stderr.index("SyntaxError")]
    assert "runpy" not in head and "bootstrap" not in head and "Traceback" not in head
    assert plain.stderr.strip().splitlines()[-1] in proc.stderr


def test_missing_script_is_a_one_line_error(tmp_path: Path):
    proc = gpubottle("run", str(tmp_path / "nope.py"))
    assert proc.returncode == 3
    assert proc.stderr.strip().startswith("gpubottle: error: no such script")
    assert "Traceback" not in proc.stderr


def test_non_python_file_is_rejected(tmp_path: Path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"\x00\x01\x02 not python {")
    proc = gpubottle("run", str(f))
    assert proc.returncode == 3
    assert "is not a Python script" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_option_is_a_usage_error():
    proc = gpubottle("run", "--steps", "zero", str(SCRIPTS / "argv_exit.py"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_live_status_on_a_terminal_does_not_garble_output(tmp_path: Path):
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # child: gpubottle on a terminal
        os.chdir(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "gpubottle", "run", "--out",
                                  str(tmp_path / "r"), str(SCRIPTS / "tty_probe.py")])
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert os.WEXITSTATUS(status) == 0
    assert "isatty=True" in text  # the script still sees a terminal
    lines = text.replace("\r\n", "\n").split("\n")
    for i in range(12):
        want = f"line {i:02d} " + "x" * 30
        # Each of the script's lines arrives whole, at the start of a line (status erased first).
        assert any(ln.endswith(want) and ln.split("\x1b[K")[-1] == want for ln in lines), want
    assert "gpubottle 00:0" in text  # the live status was drawn
    assert "gpubottle verdict" in text


def test_missing_module_is_a_one_line_error(tmp_path: Path):
    proc = gpubottle("run", "--out", str(tmp_path / "r"), "-m", "no_such_pkg.train", cwd=tmp_path)
    assert proc.returncode == 3
    assert "gpubottle: error: no module named no_such_pkg.train" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_script_that_chdirs_and_os_exits(tmp_path: Path):
    out = tmp_path / "run"
    proc = gpubottle("run", "--out", "rel-run", "--profile-window", "on", "--window-start", "3",
                     "--window-steps", "3", "--no-stacks", str(SCRIPTS / "chdir_exit.py"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "rel-run"
    assert (out / "profiler-window.pt.trace.json").exists()  # written where the run dir is
    report = load_report(out / "report.json")
    assert report["source"]["stop_reason"] == "completed"
    assert report["steps"]["count"] >= 25
