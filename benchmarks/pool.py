"""Several series of one case of bench_heavy.py, pooled: the rounds its logs printed, paired within
each series as paired.py pairs them (a round and the next, the halves swapped), the pairs of all
series together, with the same medians, 95% intervals and verdicts.

    python benchmarks/pool.py --case threads LOG [LOG ...]

A case whose interval straddles a goal at one series' pairs needs more (bench_heavy.py says how
many): a second series in the same hour on the same code, pooled here, rather than a longer one
that must be run again whole when it is cut short. Only series of the same code and settings
belong together; the logs' header lines are printed so the reader can see they match.
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from bench_heavy import AFTER_GOAL, AGREE, WHOLE_GOAL, _range, goal_verdict
from overhead_windows import _interval

_ROUND = re.compile(r"round (\d+)/(\d+): .*cost after \d+ s ([+-][\d.]+)%, whole run ([+-][\d.]+)%"
                    r".*its account ([\d.]+)%")


def series(text: str, case: str) -> tuple[str, list[tuple[float, float, float]]] | None:
    """The header line and (after, whole, account) of each round of `case` in one log; None where
    the log has no series of it."""
    header, inside = None, False
    rounds: list[tuple[float, float, float]] = []
    for line in text.splitlines():
        if not line.startswith(" "):
            inside = line.startswith(f"{case}: ")
            if inside:
                header, rounds = line, []
            continue
        m = _ROUND.search(line) if inside else None
        if m:
            rounds.append((float(m[3]) / 100, float(m[4]) / 100, float(m[5]) / 100))
    return (header, rounds) if header is not None and rounds else None


def pooled(all_rounds: list[list[tuple[float, float, float]]]) -> dict[str, dict[str, float]]:
    """Each series' rounds paired in order (an odd last one left out), all pairs together."""
    out: dict[str, dict[str, float]] = {}
    for k, key in enumerate(("after", "whole")):
        pairs = [(a[k] + b[k]) / 2 for rounds in all_rounds for a, b in zip(rounds[::2], rounds[1::2])]
        lo, hi = _interval(pairs)
        out[key] = {"median": statistics.median(pairs), "mean": statistics.fmean(pairs), "low": lo,
                    "high": hi, "pairs": len(pairs)}
    out["account"] = {"median": statistics.median(r[2] for rounds in all_rounds for r in rounds)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True)
    ap.add_argument("logs", nargs="+", type=Path)
    a = ap.parse_args()
    found = []
    for log in a.logs:
        s = series(log.read_text(), a.case)
        if s is None:
            ap.error(f"{log}: no rounds of the {a.case} case")
        print(f"{log}: {len(s[1])} rounds: {s[0]}")
        found.append(s[1])
    p = pooled(found)
    after, whole, account = p["after"], p["whole"], p["account"]["median"]
    print(f"  pooled, after 15 s: {_range(after)}: goal at most {AFTER_GOAL:.0%}: "
          f"{goal_verdict(after, AFTER_GOAL)}")
    print(f"  pooled, whole run: {_range(whole)}: goal at most {WHOLE_GOAL:.0%}: "
          f"{goal_verdict(whole, WHOLE_GOAL)}")
    off = account - whole["median"]
    print(f"  the runs' accounts {account:.2%} (median): {off:+.2%} from the whole run's median cost: "
          f"{'agrees' if abs(off) <= AGREE else 'does NOT agree'} within {AGREE:.0%}")


if __name__ == "__main__":
    main()
