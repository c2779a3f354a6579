"""Throughput cost of `gpubottle run` on the compute-bound example, against plain python.

Both are measured in this same run, interleaved (plain, gpubottle, plain, ...) so that drift in the
machine's speed hits both alike; the example times its own steps after warm-up, so start-up costs
are left out. Prints the median and the best throughput of each and their ratios. On a noisy
machine (a shared VM: the spread of plain python is printed too) both move by several percent from
run to run; more --rounds narrow them.

    python benchmarks/bench_overhead.py [--rounds 5] [--steps 150]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "compute_bound.py"


def throughput(cmd: list[str]) -> float:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    m = re.search(r"throughput: ([0-9.]+) steps/s", proc.stdout)
    if proc.returncode != 0 or not m:
        sys.exit(f"benchmark run failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    script = [str(EXAMPLE), "--steps", str(a.steps)]
    run = [sys.executable, "-m", "gpubottle", "run", "--no-status", "--out"]
    variants = {
        "python": lambda _d: [sys.executable, *script],
        "gpubottle run": lambda d: [*run, d, *script],
        "  --no-stacks": lambda d: [*run, d, "--no-stacks", *script],
    }
    results: dict[str, list[float]] = {k: [] for k in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                results[name].append(throughput(variants[name](f"{tmp}/run{r}")))
                print(f"round {r + 1}/{a.rounds} {name:14s} {results[name][-1]:8.3f} steps/s", flush=True)
    base = statistics.median(results["python"])
    spread = (max(results["python"]) - min(results["python"])) / base
    print()
    best = max(results["python"])
    print(f"{'variant':16s}{'median steps/s':>16s}{'ratio':>8s}{'best steps/s':>14s}{'ratio':>8s}")
    for name, values in results.items():
        med, top = statistics.median(values), max(values)
        print(f"{name:16s}{med:16.3f}{med / base:8.3f}{top:14.3f}{top / best:8.3f}")
    prof = statistics.median(results["gpubottle run"])
    prof_best = max(results["gpubottle run"])
    print(f"overhead of the default mode: {(1 - prof / base) * 100:+.1f}% (median of {a.rounds}; "
          f"budget 3%), {(1 - prof_best / best) * 100:+.1f}% best-of; run-to-run spread of plain "
          f"python: {spread * 100:.1f}% (a spread far above the budget means: add --rounds)")


if __name__ == "__main__":
    main()
