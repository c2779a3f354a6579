"""Where a paired round's cost falls in time: the profiled run's steps after the first 15 s split by
what gpubottle was doing as each ran, each class against plain python over the same spans.

paired.py reads one number a round (the rates after 15 s), which moves by a point from round to
round in the threads case, more than the parts being looked for. The classes here are
time-local, so each is read against plain python's steps in the very spans it covers (the
machine's drift and the halves' trades hit both alike):

- hooked: the steps outside the blocks without hooks (probes/unhooked.py), where the hot hooks and
  the step-boundary probes run;
- py-spy: steps in a block while a py-spy chunk was sampling (stacks/chunks.jsonl);
- rest: steps in a block with no chunk running: what none of the time-local parts explains (the
  supervisor's ticks, the flush thread, and whatever the process carries throughout).

A class's cost is plain's steps over the profiled run's in its spans, less one; its weight, its
share of the profiled run's time after 15 s; the weights times the costs add up to about the
round's cost. A run without blocks (a GPU run, --try-fixes, no torch probes) is all `rest`.
paired.py splits each round so against plain python; bench_heavy.py prints the medians.

    python benchmarks/in_place.py KEEP_DIR [KEEP_DIR ...]   (bench_heavy.py --keep's folders)
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

CLASSES = ("hooked", "py-spy", "rest")


@dataclass
class Part:
    """One class of a round: the profiled run's steps and time in it, plain's steps in its spans."""

    steps: int = 0
    seconds: float = 0.0
    plain_steps: float = 0.0

    @property
    def cost(self) -> float | None:
        """Plain's rate over the profiled run's in the class's spans, less one (None: too few)."""
        if self.steps < 20 or self.plain_steps <= 0:
            return None
        return self.plain_steps / self.steps - 1


def _spans(path: Path, kind: str, start: int, end: int) -> list[tuple[float, float]]:
    """Sorted (t0, t1) of the records of `kind` in a JSON-lines file (fields start, end)."""
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, list) and rec and rec[0] == kind:
                out.append((float(rec[start]), float(rec[end])))
    return sorted(out)


def _inside(spans: list[tuple[float, float]], t0: float, t1: float) -> bool:
    """Whether [t0, t1] lies within one of the sorted spans."""
    k = bisect.bisect_right(spans, (t0, float("inf"))) - 1
    return k >= 0 and spans[k][0] <= t0 and t1 <= spans[k][1]


def _overlaps(spans: list[tuple[float, float]], t0: float, t1: float) -> bool:
    k = bisect.bisect_right(spans, (t1, float("inf")))
    return any(a < t1 and b > t0 for a, b in spans[max(0, k - 2):k])


def _plain_in(plain: list[float], t0: float, t1: float) -> float:
    """Plain's steps in [t0, t1]: whole ones, and the fractions of the two it cuts (so that many
    short spans add up without a step's rounding each)."""
    i = bisect.bisect_right(plain, t0)
    j = bisect.bisect_right(plain, t1)
    if i == 0 or j >= len(plain):
        return 0.0
    n = float(j - i)
    # the step ending after t0 began at plain[i-1]: the part of it before t0 is not in the span
    n -= (t0 - plain[i - 1]) / (plain[i] - plain[i - 1])
    n += (t1 - plain[j - 1]) / (plain[j] - plain[j - 1])
    return n


def split_round(times: dict[str, object], run: Path, after_s: float) -> dict[str, Part]:
    """A kept round (paired.py's times.json and the profiled run's folder) split by class."""
    launched = float(times["launched"])  # type: ignore[arg-type]
    plain: list[float] = list(times["plain"])  # type: ignore[call-overload]
    prof: list[float] = list(times["gpubottle"])  # type: ignore[call-overload]
    blocks = _spans(run / "events.jsonl", "unhooked", 1, 2)
    chunks = _spans(run / "stacks" / "chunks.jsonl", "chunk", 2, 3)
    end = min(plain[-1], prof[-1])
    parts = {c: Part() for c in CLASSES}
    for t0, t1 in zip(prof, prof[1:]):
        if t0 - launched < after_s or t1 > end:
            continue
        if not _inside(blocks, t0, t1) and blocks:
            part = parts["hooked"]
        elif _overlaps(chunks, t0, t1):
            part = parts["py-spy"]
        else:
            part = parts["rest"]
        part.steps += 1
        part.seconds += t1 - t0
        part.plain_steps += _plain_in(plain, t0, t1)
    return parts


def summary(rounds: list[dict[str, Part]]) -> dict[str, dict[str, float]]:
    """Per class: its median cost over the rounds, its median weight, and the median of their
    product (its part of the round's cost)."""
    out = {}
    for c in CLASSES:
        rows = []
        for parts in rounds:
            total = sum(p.seconds for p in parts.values()) or 1.0
            cost = parts[c].cost
            if cost is not None:
                rows.append((cost, parts[c].seconds / total))
        if rows:
            out[c] = {"cost": statistics.median(r[0] for r in rows),
                      "weight": statistics.median(r[1] for r in rows),
                      "part": statistics.median(r[0] * r[1] for r in rows), "rounds": len(rows)}
    return out


def describe(s: dict[str, dict[str, float]]) -> str:
    return "; ".join(f"{c} {v['cost']:+.2%} over {v['weight']:.0%} of the time ({v['part']:+.2%} of the run)"
                     for c, v in s.items())


def main() -> None:
    from paired import AFTER_S  # (paired.py imports this module)

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("keep", nargs="+", type=Path, help="bench_heavy.py --keep folders (or a case's in one)")
    ap.add_argument("--after", type=float, default=AFTER_S, help="seconds from the launch left out")
    a = ap.parse_args()
    for keep in a.keep:
        found = sorted(keep.rglob("times.json"), key=lambda p: (str(p.parent.parent), len(str(p)), str(p)))
        rounds = []
        for path in found:
            parts = split_round(json.loads(path.read_text()), path.parent / "run", a.after)
            rounds.append(parts)
        if not rounds:
            print(f"{keep}: no kept rounds")
            continue
        print(f"{keep}: {len(rounds)} rounds, after {a.after:g} s: {describe(summary(rounds))}")


if __name__ == "__main__":
    main()
