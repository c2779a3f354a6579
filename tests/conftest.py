"""Helpers: run the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "examples"
HARNESS = Path(__file__).resolve().parent / "harness"
SUPPORT = Path(__file__).resolve().parent / "support"  # helpers and fakes: `from factories import ...`
TRACES = Path(__file__).resolve().parent / "traces"
GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(SUPPORT))
# pytest keeps its assert-rewritten test modules only where Python may write bytecode; this machine
# sets PYTHONDONTWRITEBYTECODE, and each of `make test`'s four processes then rewrote all ~290 test
# modules afresh (7.2 s of CPU a collection; 3.0 s from the kept ones). The Pythons the suite starts
# keep the environment's setting.
sys.dont_write_bytecode = False


# At most CPU_SLOTS training runs at a time across the suite's test processes (make test runs
# four, each with a run going at most); tests marked `light` (runs that mostly sleep for a fixed
# time: leaks, durations) run beside them and `exclusive` ones alone. The suite's verdicts hold
# beside two busy programs (more contention than its own runs), and beside other programs each run
# the suite has going is a bigger share of the cores against theirs (beside two busy programs on 2
# cores: 2026-11-26, 9:19 with two slots, 8:01 with three; 2026-12-01, 5:10 with three, 4:58 and
# 4:38 with four). The verdict that once went with four (a sleeping loader under the HF Trainer
# read preprocessing-bound, four runs and two busy programs) is now read from its recording.
# GPUBOTTLE_TEST_SLOTS overrides it.
CPU_SLOTS = int(os.environ.get("GPUBOTTLE_TEST_SLOTS", "4"))
_slot_dir: Path | None = None
_light = False


def pytest_configure(config: pytest.Config) -> None:
    global _slot_dir
    uid = getattr(config, "workerinput", {}).get("testrunuid")
    if uid:  # under xdist: one folder of lock files per test run, shared by its workers
        _slot_dir = Path(tempfile.gettempdir()) / f"gpubottle-test-slots-{uid}"
        _slot_dir.mkdir(exist_ok=True)


@pytest.fixture(autouse=True)
def _slot_kind(request: pytest.FixtureRequest) -> Iterator[None]:
    """`light`: runs without a slot; `exclusive`: holds every slot for the whole test (a test
    comparing two runs' verdicts beside busy programs: nothing heavy runs beside it); `two_slots`:
    two of them (a two-rank job, its ranks mostly waiting on reads and each other: one other run
    may go beside, as other programs would; alone they left the two cores 60% idle for ~50 s)."""
    global _light
    exclusive = request.node.get_closest_marker("exclusive") is not None
    if exclusive or request.node.get_closest_marker("two_slots") is not None:
        with held_slots(CPU_SLOTS if exclusive else min(2, CPU_SLOTS)):
            yield
        return
    _light = request.node.get_closest_marker("light") is not None
    yield
    _light = False


@contextlib.contextmanager
def held_slots(n: int) -> Iterator[None]:
    """n of the CPU_SLOTS held, the runs inside taking none of their own (a no-op without xdist)."""
    global _light
    if _slot_dir is None:
        yield
        return
    held = []
    # In order, blocking: such tests never deadlock each other.
    for i in range(n):
        fh = open(_slot_dir / f"slot{i}", "a+")  # noqa: SIM115 - closed below
        fcntl.flock(fh, fcntl.LOCK_EX)
        held.append(fh)
    was, _light = _light, True
    try:
        yield
    finally:
        _light = was
        for fh in held:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()


@contextlib.contextmanager
def cpu_slot() -> Iterator[None]:
    """Hold one of the CPU_SLOTS while a training run goes (a no-op for light tests, or without xdist)."""
    if _light or _slot_dir is None:
        yield
        return
    held = None
    while held is None:
        for i in range(CPU_SLOTS):
            fh = open(_slot_dir / f"slot{i}", "a+")  # noqa: SIM115 - closed below
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            held = fh
            break
        else:
            time.sleep(0.05)
    try:
        yield
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        held.close()


def with_harness(pythonpath: str | None) -> str:
    """PYTHONPATH for a Python the suite starts: tests/harness first (its sitecustomize skips the
    interpreter's last GC pass over torch's objects at exit, ~1 s of CPU a process), except for
    tests/check_fixes, which time whole runs as a user's machine would see them."""
    first = [] if os.environ.get("PYTEST_CURRENT_TEST", "").startswith("tests/check_fixes/") \
        else [str(HARNESS)]
    return os.pathsep.join(p for p in (*first, pythonpath) if p)


def gpubottle(*args: str, cwd: Path | None = None, timeout: float = 180,
              env: dict[str, str] | None = None, slot: bool | None = None
              ) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, holding a CPU slot where `slot` says, by default for `run`
    only: the other commands start no training, and one that waited for a slot behind three runs
    left its test process idle (a bad trace's one-line error: 33 s for 0.7 s of CPU, the suite
    beside two busy programs)."""
    if slot is None:
        slot = args[:1] == ("run",)
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = with_harness(full_env.get("PYTHONPATH"))
    with cpu_slot() if slot else contextlib.nullcontext():
        c0, t0 = _children_cpu(), time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "gpubottle", *args],
            cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout, env=full_env,
        )
    _log_run(args, _children_cpu() - c0, time.perf_counter() - t0)
    return proc


def _log_run(args: tuple[str, ...], cpu_s: float, wall_s: float, **more: object) -> None:
    """One line for a command a test ran, to $GPUBOTTLE_RUN_LOG (tests/support/cpu_per_test.py)."""
    if os.environ.get("GPUBOTTLE_RUN_LOG"):
        with open(os.environ["GPUBOTTLE_RUN_LOG"], "a") as fh:
            fh.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", ""), "args": args, **more,
                                 "cpu_s": round(cpu_s, 2), "wall_s": round(wall_s, 2)}) + "\n")


def gpubottle_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI (cli.main, what `gpubottle` runs) in this test process, from `cwd`: what
    `gpubottle(...)` gives, for a command that only reads files, without a Python's start and
    gpubottle's imports each time. For the recorded runs' reports: ~0.5 s of CPU each as a
    subprocess, ~0.1 s here (100 recordings, 2026-12-01: 54 s against 11 s, every report, its
    JSON and exit code the same byte for byte, torch imported beforehand as in a test process)."""
    import io

    from gpubottle import cli

    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    c0, t0 = time.process_time(), time.perf_counter()
    os.chdir(cwd or ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(args))
    finally:
        os.chdir(here)
    _log_run(args, time.process_time() - c0, time.perf_counter() - t0, in_process=True)
    return subprocess.CompletedProcess(["gpubottle", *args], code, out.getvalue(), err.getvalue())


def _children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def load_report(path: Path) -> dict[str, Any]:
    with open(path) as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def profiled_run(into: Path, script: Path, *script_args: str, opts: tuple[str, ...] = (),
                 timeout: float = 180, env: dict[str, str] | None = None, cwd: Path | None = None,
                 threads: int | None = 1) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """`gpubottle run` of a script, its run directory `into/run` and its JSON `into/report.json`.
    `threads`: torch's threads in the script (OMP_NUM_THREADS); None leaves torch's default."""
    out = into / "run"
    report = into / "report.json"
    # torch's OpenMP threads spin after every parallel op by default: a third of the suite's CPU
    # on 2 cores, taken from the other tests' runs. And one of them: with two, every small op's
    # hand-over between them (passive waits) is CPU the other runs need (726 tests: 5:38 with two,
    # 5:06 with one, 2026-11-28; a 384-wide MLP's step 4.9 ms with two, 1.8 ms plain). Tests about
    # torch's own thread count pass threads=None. (tests/check_fixes keep torch's defaults.)
    fixed = {"OMP_WAIT_POLICY": "PASSIVE"} | ({"OMP_NUM_THREADS": str(threads)} if threads else {})
    proc = gpubottle("run", "--out", str(out), "--json", str(report), *opts, str(script),
                     *script_args, timeout=timeout, env={**fixed, **(env or {})}, cwd=cwd)
    data = load_report(report) if report.exists() else None
    if data is not None and data.get("account") and data["source"].get("duration_s"):
        # Every run the suite makes: its account sums to its wall time (issue: the whole run).
        total, wall = sum(e["seconds"] for e in data["account"]), data["source"]["duration_s"]
        assert abs(total - wall) <= 0.05 * wall, (total, wall, data["account"])
    return proc, data


@pytest.fixture
def run_profiled(tmp_path: Path):
    """Run a script under `gpubottle run`; returns (completed process, report dict or None)."""

    def _run(script: Path, *script_args: str, opts: tuple[str, ...] = (), timeout: float = 180,
             env: dict[str, str] | None = None, cwd: Path | None = None, threads: int | None = 1):
        return profiled_run(tmp_path, script, *script_args, opts=opts, timeout=timeout, env=env,
                            cwd=cwd, threads=threads)

    return _run


# "missing": record the replayed tests' runs that have no recording of their script and command;
# "all": record every one again (after a change to what the collectors write).
RECORD_RUNS = os.environ.get("GPUBOTTLE_RECORD_RUNS", "")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if call.when == "call":
        item.stash[_PASSED] = outcome.get_result().passed


_PASSED = pytest.StashKey[bool]()


@pytest.fixture
def replayed_run(request: pytest.FixtureRequest, tmp_path: Path):
    """As run_profiled, from the test's recorded run in tests/runs/ (tests/support/recorded_runs.py
    says why and how): the real `gpubottle report` diagnoses its raw files again (in this process:
    gpubottle_here). Without a recording made from this script and these arguments, the run goes
    live (a warning says so); under GPUBOTTLE_RECORD_RUNS (make record-runs) it goes live and is
    kept if the test passes.
    `cwd`: the folder the run starts from (a test's temporary one: its paths are kept as @CWD@).
    `patch`: where --patch writes the fixes' diff (`gpubottle report --patch` when replayed, made
    from the sources in `cwd`; not part of the recording's key). `kept`: files the script writes
    in `cwd` that the test reads, recorded with the run and put back when replayed.
    The run directory of the latest call is `replayed_run.run_dir`.
    Only when live: `beside` is entered around the run (busy programs), and a test marked
    `exclusive_when_live` holds every CPU slot for it."""
    import warnings

    import recorded_runs

    made: list[tuple[Path, Path, dict[str, Any], str, Path | None, tuple[str, ...]]] = []
    calls = [0]

    def _run(script: Path, *script_args: str, opts: tuple[str, ...] = (), timeout: float = 180,
             env: dict[str, str] | None = None, threads: int | None = 1, cwd: Path | None = None,
             beside: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
             patch: Path | None = None, kept: tuple[str, ...] = ()):
        key = recorded_runs.recording_key(script, script_args, opts, threads, env)
        patching = ("--patch", str(patch)) if patch is not None else ()
        name = request.node.name + (f".{calls[0]}" if calls[0] else "")
        recording = recorded_runs.recording_path(name, key)
        into = tmp_path / f"replay{calls[0]}"
        calls[0] += 1
        _run.run_dir = into / "run"  # type: ignore[attr-defined]
        if recording.exists() and RECORD_RUNS != "all":
            run = recorded_runs.unpack(recording, into, cwd)
            proc = gpubottle_here("report", str(run), "--json", str(into / "report.json"), *patching,
                                  cwd=cwd)
            return proc, load_report(into / "report.json") if proc.returncode == 0 else None
        if not RECORD_RUNS:
            warnings.warn(f"no recording {recording.name}: ran live (make record-runs)", stacklevel=2)
        alone = request.node.get_closest_marker("exclusive_when_live") is not None
        with held_slots(CPU_SLOTS) if alone else contextlib.nullcontext(), \
                beside() if beside else contextlib.nullcontext():
            proc, report = profiled_run(into, script, *script_args, opts=(*opts, *patching),
                                        timeout=timeout, env=env, threads=threads, cwd=cwd)
        about = {"test": request.node.nodeid, "command": [str(a) for a in proc.args[3:]],
                 "torch": _torch_version(), "exit_code": proc.returncode}
        made.append((into / "run", recording, about, name, cwd, kept))
        return proc, report

    yield _run
    if RECORD_RUNS and request.node.stash.get(_PASSED, False):
        import glob

        import recorded_runs

        for run, recording, about, name, cwd, kept in made:
            for old in recording.parent.glob(f"{glob.escape(name)}-*.tar.gz"):  # (its older recordings)
                old.unlink()
            recorded_runs.pack(run, recording, about, cwd, kept)


def _torch_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("torch")


@dataclasses.dataclass(frozen=True)
class SharedRun:
    proc: subprocess.CompletedProcess[str]
    report: dict[str, Any] | None
    dir: Path  # run/ and report.json: read them, or copy them before changing anything


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory: pytest.TempPathFactory):
    """One `gpubottle run` per suite for each command line, shared by every test (in any of the
    suite's processes) that asks for the same one: a run costs ~5 s of CPU in torch's start-up and
    exit alone, and tests that only read a run need not pay it each. `{dir}` in opts is the shared
    folder. The first asker runs it (holding a CPU slot); the others wait on its lock, no slot held."""
    base = tmp_path_factory.getbasetemp()
    if _slot_dir is not None:  # under xdist: the workers' basetemps share their parent
        base = base.parent
    base = base / "shared-runs"
    base.mkdir(exist_ok=True)

    def _get(script: Path, *script_args: str, opts: tuple[str, ...] = ()) -> SharedRun:
        key = hashlib.sha1(json.dumps([str(script), script_args, opts]).encode()).hexdigest()[:16]
        into = base / key
        with open(base / f"{key}.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = into / "done.json"
            if not done.exists():
                into.mkdir(exist_ok=True)
                proc, _ = profiled_run(into, script, *script_args,
                                       opts=tuple(o.replace("{dir}", str(into)) for o in opts))
                done.write_text(json.dumps([proc.args, proc.returncode, proc.stdout, proc.stderr]))
        args, code, stdout, stderr = json.loads(done.read_text())
        report = into / "report.json"
        return SharedRun(subprocess.CompletedProcess(args, code, stdout, stderr),
                         load_report(report) if report.exists() else None, into)

    return _get


@pytest.fixture
def loop_run(shared_run) -> SharedRun:
    """The small loop stopped by `--steps 30`, without stacks, with a profiler window (steps 5-8)
    and `--html`: read by the tests of early stop, --no-stacks, no GPU, `report` of a saved run,
    the profiler window and the HTML report and timeline."""
    return shared_run(SCRIPTS / "train_loop.py", "--sleep", "0.01",
                      opts=("--steps", "30", "--no-stacks", "--profile-window", "on",
                            "--window-start", "5", "--window-steps", "4", "--html",
                            "{dir}/out/r.html"))


@pytest.fixture
def manual_loop_run(shared_run) -> SharedRun:
    """The loop without torch.optim (backward and a hand-written update), stopped by `--steps 20`,
    with a profiler window at steps 3-5."""
    return shared_run(SCRIPTS / "train_loop.py", "--manual", "--sleep", "0",
                      opts=("--steps", "20", "--profile-window", "on", "--window-start", "3",
                            "--window-steps", "3", "--no-stacks"))


@contextlib.contextmanager
def busy_programs(n: int) -> Iterator[None]:
    """Other programs' load, made on purpose: n processes spinning on a core each (a test that uses
    it is `exclusive`, so the suite's own runs do not share the machine with it)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def machine_loaded(report: dict[str, Any]) -> bool:
    """Other programs (the suite's own parallel runs too) took a good part of the cores during this
    run: cpu-contention named, or half a core or more used outside the run."""
    named = any(f["category"] == "cpu-contention" and f["severity"] != "info" for f in report["findings"])
    outside = ((report.get("evidence") or {}).get("cpu") or {}).get("outside_cores") or 0.0
    return named or outside >= 0.5


def cores_taken(report: dict[str, Any]) -> float:
    """The cores others took during the run as the rules reckon the cores a run can have
    (rules/input/loop.py's cores_taken): it also counts the suite's other runs too short-lived to
    be sampled (a run beside them: 0.47 of a core seen, 1.0 by the machine's total). Wider than
    machine_loaded, which gates most tests' strict branch: beside the suite's own runs this is
    often near a core."""
    from gpubottle.evidence import CpuEvidence
    from gpubottle.rules.input.loop import cores_taken as rules_cores_taken

    cpu = (report.get("evidence") or {}).get("cpu")
    return rules_cores_taken(CpuEvidence.from_json(cpu)) if cpu else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests by kind: `-m unit` runs tests/unit/ alone (seconds), `-m e2e` the rest."""
    unit = Path(__file__).resolve().parent / "unit"
    for item in items:
        item.add_marker("unit" if Path(str(item.fspath)).is_relative_to(unit) else "e2e")
        if "replayed_run" in getattr(item, "fixturenames", ()):
            item.add_marker("replayed")
