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

from gpubottle.launch.collectors import Collectors
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
    collectors = Collectors(rd, 1.0 / a.sample_hz, not a.no_stacks, a.stack_rate, not a.no_gpu,
                            off=("stacks=False", "gpu=False"))
    collectors.start(a.pid)
    print("sampling", flush=True)
    try:
        while not done.wait(1.0) and _alive(a.pid):
            collectors.watch(time.monotonic())
    finally:
        collectors.stop()
        status = {
            "collectors": collectors.status(),
            "sampler_errors": list(collectors.errors),
            "sampler_ticks": collectors.ticks,
        }
        with open(os.path.join(rd.path, WATCH_FILE), "w") as fh:
            json.dump(status, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
