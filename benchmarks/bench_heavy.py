"""What `gpubottle run` costs heavy runs, each interleaved with plain python in this same run, the
order rotating: a loop whose memory grows to several GB (benchmarks/heavy_memory.py), and a loop with
many threads on a saturated machine (benchmarks/many_threads.py: torch's pool at the core count and
16 Python threads preparing batches). Prints each round, the median and mean cost with a 95%
interval, plain python's own spread, and what the runs' own accounts said gpubottle cost them
(issue 32: heavy runs as well as light ones).

    python benchmarks/bench_heavy.py [--rounds 5] [--seconds 30] [--case memory|threads|all]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_overhead import end_to_end

HERE = Path(__file__).resolve().parent
CASES = {
    "memory": (HERE / "heavy_memory.py", "memory grows ~120 MB/s"),
    "threads": (HERE / "many_threads.py", "16 Python threads and torch's pool on every core"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--case", choices=(*CASES, "all"), default="all")
    a = ap.parse_args()
    for name, (script, what) in CASES.items():
        if a.case not in (name, "all"):
            continue
        print(f"{name}: plain python vs gpubottle run, {a.rounds} interleaved rounds of "
              f"benchmarks/{script.name} --seconds {a.seconds:g} ({what})", flush=True)
        e = end_to_end(a.rounds, 0, [str(script), "--seconds", str(a.seconds)])
        print(f"   median cost {e['cost']:+.2%} (95% interval {e['low']:+.2%} .. {e['high']:+.2%}), mean "
              f"{e['mean']:+.2%}; plain python's spread {e['spread']:.1%}; the runs' own accounts put "
              f"gpubottle at {e['account']:.2%} of their wall time", flush=True)


if __name__ == "__main__":
    main()
