"""Each step's end on the monotonic clock, for benchmarks/paired.py: a benchmark script calls mark()
after its optimizer step and write() at its end; nothing is kept unless BENCH_STEP_TIMES names the
file to write (a list of floats, seconds on time.monotonic(), which every process shares)."""

import json
import os
import subprocess
import sys
import time

PATH = os.environ.get("BENCH_STEP_TIMES")
_times: list[float] = []
# The marking thread's CPU at each mark too (PATH + ".cpu"): a step's CPU against its wall time
# tells the work a step does from the waits for a core (one clock_gettime, ~0.3 us).
CPU = bool(PATH and os.environ.get("BENCH_STEP_CPU"))
_cpu: list[float] = []

if os.environ.get("BENCH_BURN_SHARE"):  # a known cost beside the script (burn.py)
    subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "burn.py"),
                      os.environ["BENCH_BURN_SHARE"], str(os.getpid())])


def mark() -> None:
    if PATH:
        _times.append(time.monotonic())
        if CPU:
            _cpu.append(time.thread_time())


def write() -> None:
    if PATH:
        with open(PATH, "w") as fh:
            json.dump(_times, fh)
    if CPU:
        with open(f"{PATH}.cpu", "w") as fh:
            json.dump(_cpu, fh)
