"""Range algebra against a brute-force reference on a grid of integer points."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpubottle.trace.ranges import (
    Clipper,
    intersect,
    intersect_stream,
    merge,
    merged_pairs,
    subtract,
    total,
)

_range = st.tuples(st.integers(0, 60), st.integers(1, 12)).map(lambda t: (float(t[0]), float(t[0] + t[1])))
_ranges = st.lists(_range, max_size=25)


def _points(ranges: list[tuple[float, float]]) -> set[float]:
    """The half-unit points each range covers: enough to tell integer-bounded ranges apart."""
    return {x / 2 + 0.25 for s, e in ranges for x in range(int(2 * s), int(2 * e))}


def _is_merged(ranges: list[tuple[float, float]]) -> bool:
    return all(s < e for s, e in ranges) and all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))


@settings(max_examples=300, deadline=None)
@given(_ranges, _ranges)
def test_intersect_and_subtract_match_point_sets(a: list, b: list) -> None:
    ma, mb = merge(a), merge(b)
    both, rest = intersect(ma, mb), subtract(ma, mb)
    assert _points(both) == _points(a) & _points(b)
    assert _points(rest) == _points(a) - _points(b)
    assert _is_merged(both) and _is_merged(rest)
    assert intersect(mb, ma) == both
    assert total(both) + total(rest) == total(ma)


@settings(max_examples=200, deadline=None)
@given(_ranges, st.integers(0, 70), st.integers(0, 20))
def test_clipper_totals_a_window(a: list, s: int, width: int) -> None:
    m = merge(a)
    assert Clipper(m).total_in(s, s + width) == total(intersect(m, [(float(s), float(s + width))]))


def test_one_step_against_many_kernels_bisects() -> None:
    """A short list against a long one: the answer, and no walk over the long list's head."""
    kernels = [(float(k), k + 0.5) for k in range(200_000)]
    assert intersect([(199_990.25, 199_991.0)], kernels) == [(199_990.25, 199_990.5)]
    assert subtract([(199_990.25, 199_991.0)], kernels) == [(199_990.5, 199_991.0)]


@settings(max_examples=300, deadline=None)
@given(_ranges, _ranges)
def test_the_streamed_union_and_intersection_are_the_listed_ones(a: list, b: list) -> None:
    """merged_pairs over two arrays in any order (recorded in order, or not) and intersect_stream
    over it: what merge and intersect give from the whole list."""
    for order in (b, sorted(b)):
        starts, ends = [s for s, _e in order], [e for _s, e in order]
        assert list(merged_pairs(starts, ends)) == merge(order)
        assert intersect_stream(merge(a), merged_pairs(starts, ends)) == intersect(merge(a), merge(b))
