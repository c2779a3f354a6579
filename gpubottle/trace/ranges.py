"""Time ranges as sorted lists of (start, end): union, intersection, subtraction, total."""

from __future__ import annotations

from bisect import bisect_right

Ranges = list[tuple[float, float]]


def merge(ranges: Ranges, is_sorted: bool = False) -> Ranges:
    """Union of possibly overlapping ranges, sorted."""
    if not ranges:
        return []
    src = ranges if is_sorted else sorted(ranges)
    out: Ranges = [src[0]]
    for s, e in src[1:]:
        ls, le = out[-1]
        if s <= le:
            if e > le:
                out[-1] = (ls, e)
        else:
            out.append((s, e))
    return out


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """Intersection of two merged range lists."""
    out: Ranges = []
    i = j = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """Parts of merged `a` not covered by merged `b`."""
    out: Ranges = []
    j = 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            if cur >= e:
                break
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def total(ranges: Ranges) -> float:
    return sum(e - s for s, e in ranges)


class Clipper:
    """Total of merged ranges inside [s, e), in O(log n + k) per query rather than O(n)."""

    def __init__(self, merged: Ranges) -> None:
        self.ranges = merged
        self.starts = [r[0] for r in merged]

    def total_in(self, s: float, e: float) -> float:
        i = max(0, bisect_right(self.starts, s) - 1)
        out = 0.0
        rs = self.ranges
        while i < len(rs) and rs[i][0] < e:
            lo, hi = max(rs[i][0], s), min(rs[i][1], e)
            if hi > lo:
                out += hi - lo
            i += 1
        return out
