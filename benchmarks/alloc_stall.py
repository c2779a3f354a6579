"""Where the threads case's unexplained late cost lands: the script's own small-object allocations.

After 15 s, benchmarks/many_threads.py under `gpubottle run` lost ~0.75% (H+H2 pooled, 2026-12-04)
while gpubottle's processes outside the script used 0.12% of the core and its hooks 0.14%. perf on the
script's process (one core, 25-44 s) put much of the rest in CPython's pymalloc: `_PyObject_Malloc`'s
own share of the script's CPU 1.23-1.76% under plain python (16 runs) against 1.60-2.45% under
`gpubottle run` (19), almost all of it on one load, the free block's next pointer (a cache miss).
Not the probes' modules (imported alone: 1.27-1.92%, about plain's), not the fork (no prestart:
1.93-2.34%), not gc.freeze nor the gc callback (each removed by hand: as gpubottle's); without the
torch probes at all (install_when_torch_imported not called) 1.43-1.89% (6), without only the step
probes as gpubottle's. No single torch patch removed it (the optimizer's hooks, backward's wrapper,
the mode probes, one at a time, 3 runs each). Halves (2026-12-04, 69th session, 3 rounds each, with a
temporary switch in torch_hooks.install): without the thread/debug/math/DataLoader patches 2.09% (as
gpubottle's 2.10, plain 0.99); without the optimizer's hooks, the probes' own torch patches, backward's
wrapper, the process-group and mode probes 1.55%; of those, without the optimizer's hooks and backward's
wrapper 1.65% (gpubottle 1.84, plain 1.54), without the other three 2.20%. The hot hooks' records made
but never unpacked nor written by the flush: 1.92-1.95% (3 rounds, gpubottle 2.15-2.26, plain
1.24-1.65; a fourth, 2.36, ran about when the switch was taken out). So the hot hooks' side, at full
rate in the first 15 s and sparse after, and not only their flush; one run's spread (~0.3 points) is
as large as these differences. A tendency, not yet a mechanism: this measures it. And not where
the late time goes: the same day, `gpubottle run` beside itself without the torch probes installed
read them at +0.06% after 15 s (95% -0.22 .. +0.58; README).

Each variant runs the script on one core (under gpubottle its whole tree, the supervisor and py-spy
too) with its own `perf record` over the script's process for a window; the variants alternate
round by round (a drifting machine spreads over all of them). Prints each run's share of
`_PyObject_Malloc` (and the interpreter loop's, for scale) and each variant's median.
Needs `perf` and the permission to record another process (root, or perf_event_paranoid <= 1).

    python benchmarks/alloc_stall.py [--rounds 3] [--variants plain,gpubottle,noprestart,imports]

A variant may add variables: gpubottle+NAME=VALUE+NAME2=VALUE2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_heavy import FIXED_MALLOC

from gpubottle.collect import procfs
from gpubottle.launch.prestart import _PRELOAD, _SHARED

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "many_threads.py"
# what the script's process imports of gpubottle before the script (launch/prestart.py's lists)
PROBES = _SHARED + _PRELOAD
SYMBOLS = ("_PyObject_Malloc", "_PyEval_EvalFrameDefault")


def command(variant: str, seconds: float) -> list[str]:
    variant = variant.split("+")[0]
    args = [str(SCRIPT), "--seconds", str(seconds)]
    if variant == "plain":
        return [sys.executable, *args]
    if variant in ("gpubottle", "noprestart"):  # noprestart: its own interpreter, not a fork of the CLI
        return [sys.executable, "-m", "gpubottle", "run", "--no-status", *args]
    if variant == "imports":  # the probes' modules in the heap, no probe installed
        code = (f"import importlib, runpy, sys; [importlib.import_module(m) for m in {PROBES!r}]; "
                f"sys.path.insert(0, {str(HERE)!r}); sys.argv = {args!r}; "
                f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')")
        return [sys.executable, "-c", code]
    raise SystemExit(f"unknown variant {variant!r}: plain, gpubottle, noprestart or imports")


def busiest(root: int) -> int:
    """The process of the tree with the most threads: the script's, under gpubottle too."""
    best, most, todo = root, 0, [root]
    while todo:
        pid = todo.pop()
        tids = procfs.thread_ids(pid)
        if tids is None:
            continue
        todo += procfs.children(pid) or ()
        if len(tids) > most:
            best, most = pid, len(tids)
    return best


def shares(data: Path) -> dict[str, float]:
    out = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "sym", "--stdio",
                          "-g", "none"], capture_output=True, text=True, check=False).stdout
    found: dict[str, float] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("%") and parts[-1] in SYMBOLS:
            found[parts[-1]] = float(parts[0][:-1])
    return found


def one(variant: str, start: float, end: float, tmp: Path, core: int) -> dict[str, float]:
    env = {**os.environ, **FIXED_MALLOC}  # as bench_heavy.py runs this case
    if variant.startswith("noprestart"):
        env["GPUBOTTLE_NO_PRESTART"] = "1"
    for kv in variant.split("+")[1:]:  # gpubottle+NAME=VALUE: one more variable
        name, _, value = kv.partition("=")
        env[name] = value
    proc = subprocess.Popen(command(variant, end + 3), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd=HERE, preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    time.sleep(start)
    data = tmp / "perf.data"
    subprocess.run(["perf", "record", "-F", "499", "-p", str(busiest(proc.pid)), "-o", str(data), "--",
                    "sleep", str(end - start)], capture_output=True, check=False)
    proc.wait()
    return shares(data)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default="plain,gpubottle,imports")
    p.add_argument("--start", type=float, default=25.0, help="the window's start, seconds after launch")
    p.add_argument("--end", type=float, default=44.0)
    p.add_argument("--core", type=int, default=0)
    a = p.parse_args()
    if shutil.which("perf") is None:
        raise SystemExit("alloc_stall.py needs perf (linux-perf)")
    variants = a.variants.split(",")
    seen: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                got = one(v, a.start, a.end, Path(tmp), a.core)
                seen[v].append(got.get(SYMBOLS[0], float("nan")))
                print(f"round {r + 1} {v:10s} " + "  ".join(f"{s} {got.get(s, 0.0):.2f}%" for s in SYMBOLS),
                      flush=True)
    for v, vals in seen.items():
        print(f"{v:10s} {SYMBOLS[0]} median {statistics.median(vals):.2f}% "
              f"({', '.join(f'{x:.2f}' for x in vals)})")


if __name__ == "__main__":
    main()
