"""Time ranges as sorted lists of (start, end): union, intersection, subtraction, total."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import le

Ranges = list[tuple[float, float]]


def merge(ranges: Ranges, is_sorted: bool = False) -> Ranges:
    """Union of possibly overlapping ranges, sorted."""
    if not ranges:
        return []
    return merge_in_place(list(ranges) if is_sorted else sorted(ranges))


def merge_in_place(ranges: Ranges) -> Ranges:
    """Union of sorted `ranges`, written over the list itself: a trace's hundreds of thousands of
    ranges are never held twice."""
    if not ranges:
        return ranges
    w = 0
    ls, le = ranges[0]
    for k in range(1, len(ranges)):
        s, e = ranges[k]
        if s <= le:
            if e > le:
                le = e
                ranges[w] = (ls, e)
        else:
            w += 1
            ranges[w] = ranges[k]
            ls, le = s, e
    del ranges[w + 1:]
    return ranges


def merged_pairs(starts: Sequence[float], ends: Sequence[float]) -> Iterator[tuple[float, float]]:
    """The union of the ranges (starts[i], ends[i]), in order, one merged range at a time: a trace's
    hundreds of thousands of runtime calls are never all held as tuples (only their order, as
    indices, where they were not recorded in order)."""
    n = len(starts)
    if not n:
        return
    ordered = all(map(le, islice(starts, 0, n - 1), islice(starts, 1, None)))
    it = iter(range(n) if ordered else sorted(range(n), key=starts.__getitem__))
    i = next(it)
    ls, le_ = starts[i], ends[i]
    for i in it:
        s, e = starts[i], ends[i]
        if s <= le_:
            if e > le_:
                le_ = e
        else:
            yield ls, le_
            ls, le_ = s, e
    yield ls, le_


def intersect_stream(a: Ranges, b: Iterable[tuple[float, float]]) -> Ranges:
    """intersect(a, b) for a merged list `a` and merged ranges `b` that come one at a time, in
    order (merged_pairs): `b` is never held whole."""
    out: Ranges = []
    append = out.append
    n = len(a)
    j = 0
    for bs, be in b:
        while j < n and a[j][1] <= bs:
            j += 1
        k = j
        while k < n:
            s, e = a[k]
            if s >= be:
                break
            lo = s if s > bs else bs
            hi = e if e < be else be
            if lo < hi:
                append((lo, hi))
            k += 1
    return out


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """Intersection of two merged range lists, in O(small * log(large) + output): each range of the
    shorter list finds its first overlap in the longer by bisection (a step against a trace's
    kernels must not walk every kernel before it)."""
    if len(a) > len(b):
        a, b = b, a
    if not a or not b:
        return []
    ends = [e for _s, e in b]
    out: Ranges = []
    append = out.append
    n = len(b)
    j = 0
    for s, e in a:
        if j < n and ends[j] <= s:  # bisect only when b's next range ends before s
            j = bisect_right(ends, s, j)  # the first range of b that ends after s
        k = j
        while k < n:
            bs, be = b[k]
            if bs >= e:
                break
            append((s if s > bs else bs, e if e < be else be))
            k += 1
    return [r for r in out if r[0] < r[1]]


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """Parts of merged `a` not covered by merged `b`; each range of `a` finds the first range of `b`
    it meets by bisection."""
    if not a or not b:
        return list(a)
    out: Ranges = []
    append = out.append
    ends = [e for _s, e in b]
    n = len(b)
    j = 0
    for s, e in a:
        if j < n and ends[j] <= s:
            j = bisect_right(ends, s, j)
        cur = s
        k = j
        while k < n:
            bs, be = b[k]
            if bs >= e:
                break
            if bs > cur:
                append((cur, bs))
            if be > cur:
                cur = be
            if cur >= e:
                break
            k += 1
        if cur < e:
            append((cur, e))
    return out


def overlap(pairs: Iterable[tuple[float, float]], b: Ranges) -> float:
    """Total of sorted, disjoint `pairs` covered by merged `b`, in one pass: the pairs may come from
    a generator, so a trace's hundreds of thousands of gaps are never held as a list."""
    out = 0.0
    j, n = 0, len(b)
    for s, e in pairs:
        while j < n and b[j][1] <= s:
            j += 1
        k = j
        while k < n and b[k][0] < e:
            lo, hi = max(s, b[k][0]), min(e, b[k][1])
            if hi > lo:
                out += hi - lo
            k += 1
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
        n = len(rs)
        while i < n:
            lo, hi = rs[i]
            if lo >= e:
                break
            if lo < s:
                lo = s
            if hi > e:
                hi = e
            if hi > lo:
                out += hi - lo
            i += 1
        return out
