"""What `gpubottle run` costs a heavy run: a loop whose memory grows to several GB
(benchmarks/heavy_memory.py), interleaved with plain python in this same run, the order rotating.
Prints each round, the median and mean cost with a 95% interval, plain python's own spread, and
what the runs' own accounts said gpubottle cost them (issue 32: heavy runs as well as light ones).

    python benchmarks/bench_heavy.py [--rounds 5] [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_overhead import run_throughput
from overhead_windows import _interval

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ROOT / "benchmarks" / "heavy_memory.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    script = [str(HEAVY), "--seconds", str(a.seconds)]
    plain: list[float] = []
    profiled: list[float] = []
    account: list[float] = []
    print(f"heavy run: plain python vs gpubottle run, {a.rounds} interleaved rounds of "
          f"benchmarks/heavy_memory.py --seconds {a.seconds:g} (memory grows ~120 MB/s)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for name in (("python", "gpubottle") if r % 2 == 0 else ("gpubottle", "python")):
                if name == "python":
                    plain.append(run_throughput([sys.executable, *script]))
                else:
                    d = f"{tmp}/r{r}"
                    profiled.append(run_throughput(
                        [sys.executable, "-m", "gpubottle", "run", "--no-status", "--out", d, *script]))
                    with open(os.path.join(d, "evidence.json")) as fh:
                        ev = json.load(fh)
                    account.append(sum(e["share"] for e in ev.get("account", [])
                                       if e["phase"] == "gpubottle"))
                value = (plain if name == "python" else profiled)[-1]
                print(f"  round {r + 1}/{a.rounds} {name:10s} {value:8.3f} steps/s", flush=True)
    costs = [1 - g / p for g, p in zip(profiled, plain)]
    lo, hi = _interval(costs)
    base = statistics.median(plain)
    print(f"   median cost {statistics.median(costs):+.2%} (95% interval {lo:+.2%} .. {hi:+.2%}), mean "
          f"{statistics.fmean(costs):+.2%}; plain python's spread {(max(plain) - min(plain)) / base:.1%}; "
          f"the runs' own accounts put gpubottle at {statistics.median(account):.2%} of their wall time")


if __name__ == "__main__":
    main()
