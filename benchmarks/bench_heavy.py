"""What `gpubottle run` costs a heavy run: a loop whose memory grows to several GB
(benchmarks/heavy_memory.py), interleaved with plain python in this same run, the order rotating.
Prints each round, the median and mean cost with a 95% interval, plain python's own spread, and
what the runs' own accounts said gpubottle cost them (issue 32: heavy runs as well as light ones).

    python benchmarks/bench_heavy.py [--rounds 5] [--seconds 30]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_overhead import end_to_end

HEAVY = Path(__file__).resolve().parent / "heavy_memory.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    print(f"heavy run: plain python vs gpubottle run, {a.rounds} interleaved rounds of "
          f"benchmarks/heavy_memory.py --seconds {a.seconds:g} (memory grows ~120 MB/s)", flush=True)
    e = end_to_end(a.rounds, 0, [str(HEAVY), "--seconds", str(a.seconds)])
    print(f"   median cost {e['cost']:+.2%} (95% interval {e['low']:+.2%} .. {e['high']:+.2%}), mean "
          f"{e['mean']:+.2%}; plain python's spread {e['spread']:.1%}; the runs' own accounts put "
          f"gpubottle at {e['account']:.2%} of their wall time")


if __name__ == "__main__":
    main()
