"""The supervisor of an in-process profile (`gpubottle.profile`, `%%gpubottle`): it samples a process
it did not start, the one that started it.

    python -m gpubottle.launch.watch --pid PID --run-dir DIR [--sample-hz HZ] [--stack-rate N]
                                     [--no-stacks] [--no-gpu]

The same collectors as `gpubottle run`'s supervisor (the process tree with its DataLoader workers,
py-spy, NVML, the leak watch), into the same run directory files. It starts sampling when it reads a
line on stdin (by then the profiled process has allowed it to trace it, where Yama asks for that),
and stops at the end of stdin: when the profile ends, or when the profiled process dies. Its own
process and py-spy, children of the profiled one, are left out of the run's tree. What the
collectors said is written to RUN_DIR/watch.json for the report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

from gpubottle.collect.leakwatch import LeakWatch
from gpubottle.collect.nvml import NvmlSampler
from gpubottle.collect.process_tree import TreeSampler
from gpubottle.collect.stacks import StackSampler
from gpubottle.launch.supervisor import watch_memory
from gpubottle.options import DEFAULT_SAMPLE_HZ, DEFAULT_STACK_RATE
from gpubottle.rundir import RunDir

WATCH_FILE = "watch.json"


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m gpubottle.launch.watch", description=__doc__)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--sample-hz", type=float, default=DEFAULT_SAMPLE_HZ)
    ap.add_argument("--stack-rate", type=int, default=DEFAULT_STACK_RATE)
    ap.add_argument("--no-stacks", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    return ap.parse_args(argv)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def main(argv: list[str] | None = None) -> int:
    a = _args(sys.argv[1:] if argv is None else argv)
    rd = RunDir(a.run_dir)
    if not sys.stdin.readline():  # the profiled process went away before saying go
        return 0
    done = threading.Event()

    def until_eof() -> None:
        try:
            sys.stdin.read()
        finally:
            done.set()

    threading.Thread(target=until_eof, name="gpubottle-watch-stdin", daemon=True).start()
    samples = open(rd.samples, "a")  # noqa: SIM115 - closed below
    sampler = TreeSampler(a.pid, samples, 1.0 / a.sample_hz)
    stacks = None if a.no_stacks else StackSampler(rd.stacks, rate=a.stack_rate)
    gpu_out = None if a.no_gpu else open(rd.gpu_samples, "a")  # noqa: SIM115 - closed below
    nvml = NvmlSampler(gpu_out) if gpu_out is not None else None
    started = time.monotonic()
    sampler.start()
    collectors: list[Any] = [c for c in (stacks, nvml) if c is not None]
    for c in collectors:
        try:
            c.start(a.pid)
        except Exception as exc:  # fail open
            sampler.errors.append(f"{type(c).__name__}: {exc!r}")
    print("sampling", flush=True)
    leaks = LeakWatch(started)
    try:
        while not done.wait(1.0) and _alive(a.pid):
            watch_memory(leaks, sampler, time.monotonic(), rd.census_request)
    finally:
        for c in collectors:
            try:
                c.stop()
            except Exception as exc:
                sampler.errors.append(f"{type(c).__name__}: {exc!r}")
        sampler.stop()
        samples.close()
        if gpu_out is not None:
            gpu_out.close()
        status = {
            "collectors": {
                "py-spy": stacks.status() if stacks else {"ok": False, "reason": "turned off (stacks=False)"},
                "nvml": nvml.status() if nvml else {"ok": False, "reason": "turned off (gpu=False)"},
            },
            "sampler_errors": list(sampler.errors),
            "sampler_ticks": sampler.ticks,
        }
        with open(os.path.join(rd.path, WATCH_FILE), "w") as fh:
            json.dump(status, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
